use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

fn primes(lo: u64, hi: u64) -> u64 {
    (lo.max(2)..hi)
        .filter(|&i| (2..).take_while(|d| d * d <= i).all(|d| i % d != 0))
        .count() as u64
}

// Threads: workers sending results on a channel, Arc<Mutex>, atomics and
// scoped threads.
fn main() {
    let (tx, rx) = mpsc::channel();
    let mut handles = Vec::new();
    for k in 0..8u64 {
        let tx = tx.clone();
        handles.push(thread::spawn(move || {
            tx.send((k, primes(k * 250000, (k + 1) * 250000))).unwrap();
        }));
    }
    drop(tx);
    let mut res: Vec<(u64, u64)> = rx.iter().collect();
    for h in handles {
        h.join().unwrap();
    }
    res.sort();
    for (k, c) in &res {
        println!("range {}: {}", k, c);
    }
    println!("primes below 2e6: {}", res.iter().map(|r| r.1).sum::<u64>());

    let counter = Arc::new(Mutex::new(0u64));
    let atomic = Arc::new(AtomicU64::new(0));
    let hs: Vec<_> = (0..6)
        .map(|_| {
            let (c, a) = (Arc::clone(&counter), Arc::clone(&atomic));
            thread::spawn(move || {
                for _ in 0..100000 {
                    *c.lock().unwrap() += 2;
                    a.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    println!("mutex={} atomic={}", counter.lock().unwrap(), atomic.load(Ordering::SeqCst));

    let data: Vec<u64> = (1..=1_000_000).collect();
    let mut sums = [0u64; 4];
    thread::scope(|s| {
        for (chunk, out) in data.chunks(250000).zip(sums.iter_mut()) {
            s.spawn(move || *out = chunk.iter().map(|x| x * x % 7).sum());
        }
    });
    println!("scoped sums {:?}", sums);
}
