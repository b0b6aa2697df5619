import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;

// Hash maps: word counts over a large generated text, the top words, and
// a HashSet of distinct pairs.
public class Main {
    public static void main(String[] args) throws IOException {
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in));
        Map<String, Integer> count = new HashMap<>();
        HashSet<Long> pairs = new HashSet<>();
        String line, prev = "";
        long words = 0;
        while ((line = r.readLine()) != null) {
            for (String w : line.split(" ")) {
                if (w.isEmpty()) continue;
                words++;
                count.merge(w, 1, Integer::sum);
                pairs.add(((long) prev.hashCode() << 32) ^ w.hashCode());
                prev = w;
            }
        }
        List<Map.Entry<String, Integer>> es = new ArrayList<>(count.entrySet());
        es.sort((a, b) -> a.getValue().equals(b.getValue()) ? a.getKey().compareTo(b.getKey()) : b.getValue() - a.getValue());
        System.out.println("words=" + words + " distinct=" + count.size() + " pairs=" + pairs.size());
        for (int i = 0; i < 10; i++) System.out.println(es.get(i).getKey() + " " + es.get(i).getValue());
    }
}
