// System.exit with a status, after output and from a shutdown hook's
// point of view.
public class Main {
    public static void main(String[] args) {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> System.out.println("shutdown hook")));
        System.out.println("exiting with 42");
        System.err.println("bye");
        System.exit(42);
    }
}
