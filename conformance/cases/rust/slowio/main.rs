use std::io::{self, BufRead};

// Slow I/O: stdin line by line, println! per number (stdout is line
// buffered: a write per line).
fn main() {
    let stdin = io::stdin();
    let mut lines = stdin.lock().lines();
    let n: usize = lines.next().unwrap().unwrap().trim().parse().unwrap();
    let mut sum = 0i64;
    let mut seen = 0;
    for line in lines {
        for t in line.unwrap().split_whitespace() {
            sum += t.parse::<i64>().unwrap();
            seen += 1;
            println!("{}", sum);
        }
    }
    println!("done {} of {}", seen, n);
}
