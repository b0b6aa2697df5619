// An exception caught, then one uncaught: the JVM prints the stack trace
// on stderr and exits with status 1.
public class Main {
    static int parse(String s) {
        return Integer.parseInt(s);
    }

    static void fail(int depth) {
        if (depth == 0) throw new IllegalStateException("boom at the bottom");
        fail(depth - 1);
    }

    public static void main(String[] args) {
        try {
            parse("12x");
        } catch (NumberFormatException e) {
            System.out.println("caught: " + e.getMessage());
        }
        int[] a = new int[3];
        try {
            a[5] = 1;
        } catch (ArrayIndexOutOfBoundsException e) {
            System.out.println("caught: " + e.getMessage());
        }
        System.out.println("now failing");
        fail(3);
    }
}
