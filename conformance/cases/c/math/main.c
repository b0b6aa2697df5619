// libm and floating point: results printed with fixed precision.
#include <fenv.h>
#include <math.h>
#include <stdio.h>

int main(void) {
    double xs[] = {0.5, 1.0, 2.0, 10.0, 1e-3};
    for (int i = 0; i < 5; i++) {
        double x = xs[i];
        printf("%.12f %.12f %.12f %.12f %.12f\n", sqrt(x), sin(x), exp(x), log(x), atan2(x, 1.5));
    }
    printf("%.6f %.6f %.6f\n", pow(2, 0.5), cbrt(27), hypot(3, 4));
    printf("%g %g %d\n", floor(-2.5), round(-2.5), isnan(sqrt(-1)));
    fesetround(FE_UPWARD);
    volatile double third = 1.0;
    printf("rounding upward: %.20f\n", third / 3);
    fesetround(FE_TONEAREST);
    long double l = 1.0L / 3;
    printf("long double %.18Lf\n", l);
    return 0;
}
