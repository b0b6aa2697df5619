// Deep recursion: a depth-first search down a path of 100000 nodes on the
// main thread (its stack is -Xss64m), and of 1000000 nodes in a thread
// made with a 512 MiB stack, as judges' templates do.
public class Main {
    static int[] next;
    static long[] depth;

    static long dfs(int v, long d) {
        depth[v] = d;
        if (next[v] < 0) return d;
        return dfs(next[v], d + 1) + 1;
    }

    static String walk(int n) {
        next = new int[n];
        depth = new long[n];
        for (int i = 0; i < n; i++) next[i] = i + 1 < n ? i + 1 : -1;
        long r = dfs(0, 0);
        return "n=" + n + " r=" + r + " last=" + depth[n - 1];
    }

    public static void main(String[] args) throws InterruptedException {
        System.out.println("main: " + walk(100000));
        String[] res = new String[1];
        Thread t = new Thread(null, () -> res[0] = walk(1000000), "deep", 512L << 20);
        t.start();
        t.join();
        System.out.println("thread: " + res[0]);
    }
}
