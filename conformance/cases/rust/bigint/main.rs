// Big numbers by hand, as Rust has none in std: base 1e9 limbs, factorial,
// powers of two, Fibonacci.
type Big = Vec<u64>; // little-endian limbs in base 1e9

const BASE: u64 = 1_000_000_000;

fn mul_small(a: &mut Big, m: u64) {
    let mut carry = 0;
    for x in a.iter_mut() {
        let v = *x * m + carry;
        *x = v % BASE;
        carry = v / BASE;
    }
    while carry > 0 {
        a.push(carry % BASE);
        carry /= BASE;
    }
}

fn add(a: &Big, b: &Big) -> Big {
    let mut r = Vec::with_capacity(a.len().max(b.len()) + 1);
    let mut carry = 0;
    for i in 0..a.len().max(b.len()) {
        let v = a.get(i).unwrap_or(&0) + b.get(i).unwrap_or(&0) + carry;
        r.push(v % BASE);
        carry = v / BASE;
    }
    if carry > 0 {
        r.push(carry);
    }
    r
}

fn to_string(a: &Big) -> String {
    let mut s = a.last().unwrap().to_string();
    for x in a.iter().rev().skip(1) {
        s.push_str(&format!("{:09}", x));
    }
    s
}

fn main() {
    let mut f: Big = vec![1];
    for i in 2..=3000 {
        mul_small(&mut f, i);
    }
    let fs = to_string(&f);
    let ds: u64 = fs.bytes().map(|b| (b - b'0') as u64).sum();
    println!("3000! has {} digits, digit sum {}, starts {}", fs.len(), ds, &fs[..30]);
    let mut p: Big = vec![1];
    for _ in 0..20000 {
        mul_small(&mut p, 2);
    }
    let ps = to_string(&p);
    println!("2^20000 has {} digits, ends {}", ps.len(), &ps[ps.len() - 30..]);
    let (mut a, mut b): (Big, Big) = (vec![0], vec![1]);
    for _ in 0..10000 {
        let t = add(&a, &b);
        a = b;
        b = t;
    }
    let s = to_string(&a);
    println!("fib(10000) ends {}, {} digits", &s[s.len() - 40..], s.len());
    let m: u128 = 170141183460469231731687303715884105727;
    println!("u128: {} {}", m, m.count_ones());
}
