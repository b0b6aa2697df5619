import java.io.IOException;
import java.util.zip.CRC32;

// Reads all of stdin at once and describes it.
public class Main {
    public static void main(String[] args) throws IOException {
        byte[] b = System.in.readAllBytes();
        CRC32 crc = new CRC32();
        crc.update(b);
        int lines = 0;
        for (byte x : b) if (x == '\n') lines++;
        System.out.printf("bytes=%d lines=%d crc32=%08x%n", b.length, lines, crc.getValue());
    }
}
