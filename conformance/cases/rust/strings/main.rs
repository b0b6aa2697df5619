use std::collections::BTreeMap;
use std::io::{self, BufRead};

// String processing: per line, reversal, case, palindromes, numbers, sorted
// words, and a character histogram; UTF-8 in and out.
fn main() {
    let stdin = io::stdin();
    let mut hist: BTreeMap<char, usize> = BTreeMap::new();
    for (n, line) in stdin.lock().lines().enumerate() {
        let line = line.unwrap();
        let rev: String = line.chars().rev().collect();
        let clean: String = line.to_lowercase().chars().filter(|c| c.is_ascii_alphanumeric()).collect();
        let pal = clean.chars().eq(clean.chars().rev());
        let sum: i64 = line
            .split(|c: char| !(c.is_ascii_digit() || c == '-'))
            .filter_map(|t| t.parse::<i64>().ok())
            .sum();
        let mut words: Vec<&str> = line.split_whitespace().collect();
        words.sort();
        println!("{:3}|{}|{}|pal={}|sum={}|words={}", n + 1, rev, line.to_uppercase(), pal, sum, words.join(","));
        for c in line.chars() {
            *hist.entry(c).or_insert(0) += 1;
        }
    }
    let h: Vec<String> = hist.iter().map(|(c, k)| format!("{}={}", c, k)).collect();
    println!("histogram: {}", h.join(" "));
}
