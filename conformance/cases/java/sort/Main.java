import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;

// Sorting: a million ints (dual-pivot quicksort), objects with a
// comparator (TimSort, stable), and a sorted array searched.
public class Main {
    record Item(int key, int id) {}

    public static void main(String[] args) {
        long x = 987654321;
        int[] a = new int[1_000_000];
        for (int i = 0; i < a.length; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            a[i] = (int) (x >>> 33);
        }
        Arrays.sort(a);
        long h = 0;
        for (int v : a) h = h * 31 + v;
        System.out.println("min=" + a[0] + " max=" + a[a.length - 1] + " median=" + a[a.length / 2] + " hash=" + h);
        System.out.println("search: " + (Arrays.binarySearch(a, a[12345]) >= 0));

        List<Item> items = new ArrayList<>();
        for (int i = 0; i < 200_000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            items.add(new Item((int) ((x >>> 33) % 1000), i));
        }
        items.sort(Comparator.comparingInt(Item::key).reversed());
        long stable = 0;
        for (int i = 1; i < items.size(); i++) {
            Item p = items.get(i - 1), q = items.get(i);
            if (p.key() == q.key() && p.id() > q.id()) stable++;
        }
        System.out.println("first=" + items.get(0) + " last=" + items.get(items.size() - 1) + " unstable pairs=" + stable);
        List<String> words = new ArrayList<>(List.of("pear", "apple", "fig", "banana", "kiwi", "cherry"));
        Collections.sort(words, Comparator.comparing(String::length).thenComparing(Comparator.naturalOrder()));
        System.out.println(words);
    }
}
