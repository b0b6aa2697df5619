import java.io.DataInputStream;
import java.io.IOException;
import java.io.PrintWriter;

// Fast input as judges write it: a byte buffer over System.in, parsed by
// hand; output through one PrintWriter.
public class Main {
    static final DataInputStream in = new DataInputStream(System.in);
    static final byte[] buf = new byte[1 << 16];
    static int len, pos;

    static int read() throws IOException {
        if (pos == len) {
            len = in.read(buf, 0, buf.length);
            pos = 0;
            if (len <= 0) return -1;
        }
        return buf[pos++];
    }

    static long nextLong() throws IOException {
        int c = read();
        while (c == ' ' || c == '\n' || c == '\r') c = read();
        boolean neg = c == '-';
        if (neg) c = read();
        long r = 0;
        while (c >= '0' && c <= '9') {
            r = r * 10 + (c - '0');
            c = read();
        }
        return neg ? -r : r;
    }

    public static void main(String[] args) throws IOException {
        int n = (int) nextLong();
        long sum = 0, xor = 0, max = Long.MIN_VALUE;
        PrintWriter out = new PrintWriter(System.out);
        for (int i = 0; i < n; i++) {
            long v = nextLong();
            sum += v;
            xor ^= v;
            max = Math.max(max, v);
            if (i % 10000 == 0) out.println(i + " " + v);
        }
        out.println("n=" + n + " sum=" + sum + " xor=" + xor + " max=" + max);
        out.flush();
    }
}
