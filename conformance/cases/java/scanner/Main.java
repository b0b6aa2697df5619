import java.util.Scanner;

// Slow I/O as beginners write it: Scanner in, System.out.println per line
// (a write per line).
public class Main {
    public static void main(String[] args) {
        Scanner sc = new Scanner(System.in);
        int n = sc.nextInt();
        long sum = 0;
        for (int i = 0; i < n; i++) {
            long v = sc.nextLong();
            sum += v;
            System.out.println(sum);
        }
        System.out.println("done " + n);
    }
}
