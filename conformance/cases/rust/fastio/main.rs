use std::io::{self, Read, Write};

// Fast input as judges write it: all of stdin in one String, split on
// whitespace; output through a BufWriter.
fn main() {
    let mut s = String::new();
    io::stdin().read_to_string(&mut s).unwrap();
    let mut it = s.split_ascii_whitespace().map(|t| t.parse::<i64>().unwrap());
    let n = it.next().unwrap() as usize;
    let out = io::stdout();
    let mut w = io::BufWriter::new(out.lock());
    let (mut sum, mut xor, mut max) = (0i64, 0i64, i64::MIN);
    for i in 0..n {
        let v = it.next().unwrap();
        sum += v;
        xor ^= v;
        max = max.max(v);
        if i % 10000 == 0 {
            writeln!(w, "{} {}", i, v).unwrap();
        }
    }
    writeln!(w, "n={} sum={} xor={} max={}", n, sum, xor, max).unwrap();
}
