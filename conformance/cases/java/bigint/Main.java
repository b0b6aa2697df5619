import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;

// Big numbers: BigInteger factorial, powers, modular exponentiation,
// Fibonacci; BigDecimal square root to 100 digits.
public class Main {
    public static void main(String[] args) {
        BigInteger f = BigInteger.ONE;
        for (int i = 2; i <= 3000; i++) f = f.multiply(BigInteger.valueOf(i));
        String fs = f.toString();
        int digitSum = 0;
        for (char c : fs.toCharArray()) digitSum += c - '0';
        System.out.println("3000! has " + fs.length() + " digits, digit sum " + digitSum + ", starts " + fs.substring(0, 30));
        BigInteger p = BigInteger.TWO.pow(20000);
        System.out.println("2^20000 mod 1e9+7 = " + p.mod(BigInteger.valueOf(1_000_000_007)) + ", bits " + p.bitLength());
        BigInteger m = new BigInteger("170141183460469231731687303715884105727");
        System.out.println("3^(m-1) mod m = " + BigInteger.valueOf(3).modPow(m.subtract(BigInteger.ONE), m) + ", prime " + m.isProbablePrime(50));
        BigInteger a = BigInteger.ZERO, b = BigInteger.ONE;
        for (int i = 0; i < 10000; i++) {
            BigInteger t = a.add(b);
            a = b;
            b = t;
        }
        String fib = a.toString();
        System.out.println("fib(10000) ends " + fib.substring(fib.length() - 40) + ", " + fib.length() + " digits");
        System.out.println("sqrt(2) = " + new BigDecimal(2).sqrt(new MathContext(100)));
        System.out.println("gcd = " + f.gcd(p.add(BigInteger.ONE)).bitLength());
    }
}
