import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;

// Large output: 70000 lines through a BufferedWriter, about 850 KB (under the 1 MiB output limit).
public class Main {
    public static void main(String[] args) throws IOException {
        BufferedWriter w = new BufferedWriter(new OutputStreamWriter(System.out));
        for (long i = 0; i < 70000; i++) {
            w.write(i + " " + (i * i % 1000003));
            w.newLine();
        }
        w.flush();
    }
}
