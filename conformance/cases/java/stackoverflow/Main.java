// Unbounded recursion ends in a StackOverflowError, which the program
// catches: the JVM's guard pages and its SIGSEGV handler at work.
public class Main {
    static int depth;

    static void down() {
        depth++;
        down();
    }

    public static void main(String[] args) {
        try {
            down();
        } catch (StackOverflowError e) {
            System.out.println("caught " + e.getClass().getName() + " deep=" + (depth > 10000));
        }
        System.out.println("still running");
    }
}
