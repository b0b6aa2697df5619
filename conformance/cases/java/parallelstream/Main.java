import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;
import java.util.stream.LongStream;

// The common ForkJoinPool: a parallel stream and CompletableFutures.
public class Main {
    static boolean prime(int n) {
        if (n < 2) return false;
        for (int d = 2; (long) d * d <= n; d++) if (n % d == 0) return false;
        return true;
    }

    public static void main(String[] args) {
        long c = IntStream.range(0, 3_000_000).parallel().filter(Main::prime).count();
        System.out.println("primes below 3e6: " + c);
        long s = LongStream.rangeClosed(1, 10_000_000).parallel().map(x -> x * x % 1000).sum();
        System.out.println("sum: " + s);
        CompletableFuture<Long> a = CompletableFuture.supplyAsync(() -> LongStream.range(0, 1000).sum());
        CompletableFuture<Long> b = CompletableFuture.supplyAsync(() -> LongStream.range(1000, 2000).sum());
        System.out.println("futures: " + a.thenCombine(b, Long::sum).join());
    }
}
