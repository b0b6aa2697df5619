use std::io::{self, Write};

// Large output: 70000 lines through a BufWriter, about 850 KB.
fn main() {
    let out = io::stdout();
    let mut w = io::BufWriter::new(out.lock());
    for i in 0..70000u64 {
        writeln!(w, "{} {}", i, i * i % 1000003).unwrap();
    }
}
