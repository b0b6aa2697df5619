// Sorting: a million u32 (sort_unstable), records by key (stable sort),
// dedup and binary search.
fn main() {
    let mut x: u64 = 987654321;
    let mut next = move || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) as u32
    };
    let mut a: Vec<u32> = (0..1_000_000).map(|_| next()).collect();
    a.sort_unstable();
    let h = a.iter().fold(0u64, |h, &v| h.wrapping_mul(31).wrapping_add(v as u64));
    println!("min={} max={} median={} hash={}", a[0], a[a.len() - 1], a[a.len() / 2], h);
    println!("search: {}", a.binary_search(&a[12345]).is_ok());
    let mut d = a.clone();
    d.dedup();
    println!("distinct: {}", d.len());
    let mut items: Vec<(u32, usize)> = (0..200_000).map(|i| (next() % 1000, i)).collect();
    items.sort_by(|p, q| q.0.cmp(&p.0));
    let unstable = items.windows(2).filter(|w| w[0].0 == w[1].0 && w[0].1 > w[1].1).count();
    println!("first={:?} last={:?} unstable pairs={}", items[0], items[items.len() - 1], unstable);
    let mut words = vec!["pear", "apple", "fig", "banana", "kiwi", "cherry"];
    words.sort_by_key(|w| (w.len(), *w));
    println!("{:?}", words);
    let mut f = vec![3.5f64, -1.0, 2.25, 0.0, -7.5];
    f.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("{:?}", f);
}
