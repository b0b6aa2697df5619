import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;

// Threads: an ExecutorService of 4 counting primes in 8 ranges, plain
// threads with a latch, an AtomicLong and a synchronized counter.
public class Main {
    static long counter;

    static synchronized void add(long v) {
        counter += v;
    }

    static int primes(int lo, int hi) {
        int c = 0;
        for (int i = Math.max(lo, 2); i < hi; i++) {
            boolean p = true;
            for (int d = 2; (long) d * d <= i; d++) {
                if (i % d == 0) {
                    p = false;
                    break;
                }
            }
            if (p) c++;
        }
        return c;
    }

    public static void main(String[] args) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        List<Future<Integer>> fs = new ArrayList<>();
        for (int k = 0; k < 8; k++) {
            int lo = k * 250000, hi = (k + 1) * 250000;
            fs.add(pool.submit(() -> primes(lo, hi)));
        }
        int total = 0;
        for (int k = 0; k < fs.size(); k++) {
            int c = fs.get(k).get();
            total += c;
            System.out.println("range " + k + ": " + c);
        }
        pool.shutdown();
        System.out.println("primes below 2e6: " + total + ", terminated " + pool.awaitTermination(1, java.util.concurrent.TimeUnit.MINUTES));

        AtomicLong atomic = new AtomicLong();
        CountDownLatch done = new CountDownLatch(6);
        for (int t = 0; t < 6; t++) {
            new Thread(() -> {
                for (int i = 0; i < 100000; i++) {
                    atomic.incrementAndGet();
                    add(2);
                }
                done.countDown();
            }).start();
        }
        done.await();
        System.out.println("atomic=" + atomic.get() + " synchronized=" + counter);
    }
}
