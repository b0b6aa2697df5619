import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

// String processing: per line, reversal, case, palindromes, regex, a
// character histogram; UTF-8 in and out.
public class Main {
    public static void main(String[] args) throws IOException {
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        TreeMap<Character, Integer> hist = new TreeMap<>();
        Pattern num = Pattern.compile("-?\\d+");
        String line;
        int n = 0;
        while ((line = r.readLine()) != null) {
            n++;
            String rev = new StringBuilder(line).reverse().toString();
            String clean = line.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]", "");
            boolean pal = new StringBuilder(clean).reverse().toString().equals(clean);
            long sum = 0;
            Matcher m = num.matcher(line);
            while (m.find()) sum += Long.parseLong(m.group());
            String[] words = line.trim().split("\\s+");
            Arrays.sort(words);
            out.append(String.format(Locale.ROOT, "%3d|%s|%s|pal=%b|sum=%d|words=%s%n",
                    n, rev, line.toUpperCase(Locale.ROOT), pal, sum, String.join(",", words)));
            for (char c : line.toCharArray()) hist.merge(c, 1, Integer::sum);
        }
        out.append("histogram:");
        hist.forEach((c, k) -> out.append(' ').append(c).append('=').append(k));
        out.append('\n');
        System.out.print(out);
    }
}
