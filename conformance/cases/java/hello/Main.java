public class Main {
    public static void main(String[] args) {
        System.out.println("Hello, World!");
        System.out.println("héllo wörld ✓ 日本");
        System.err.println("to stderr");
    }
}
