use std::collections::{HashMap, HashSet};
use std::io::{self, Read};

// Hash maps: word counts over a large generated text (HashMap's SipHash
// keys are random: the output is sorted), and a HashSet of pairs.
fn main() {
    let mut s = String::new();
    io::stdin().read_to_string(&mut s).unwrap();
    let mut count: HashMap<&str, u32> = HashMap::new();
    let mut pairs: HashSet<(&str, &str)> = HashSet::new();
    let mut prev = "";
    let mut words = 0;
    for w in s.split_whitespace() {
        words += 1;
        *count.entry(w).or_insert(0) += 1;
        pairs.insert((prev, w));
        prev = w;
    }
    let mut es: Vec<(&str, u32)> = count.iter().map(|(k, v)| (*k, *v)).collect();
    es.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    println!("words={} distinct={} pairs={}", words, count.len(), pairs.len());
    for (w, c) in es.iter().take(10) {
        println!("{} {}", w, c);
    }
}
