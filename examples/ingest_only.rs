//! Reads one capture through the ingest stage alone, counting exchanges and problems
//! and dropping them: the pcap reader's own speed and memory, without correlation
//! (`docs/performance.md`). `cargo run --release --example ingest_only -- FILE`

use mcpsift::config::Limits;
use mcpsift::ingest::{ingest, Problem, Sink};
use mcpsift::model::Exchange;

#[derive(Default)]
struct Count {
    exchanges: u64,
    problems: u64,
}

impl Sink for Count {
    fn exchange(&mut self, _: Exchange) {
        self.exchanges += 1;
    }
    fn problem(&mut self, _: Problem) {
        self.problems += 1;
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: ingest_only FILE")?;
    let mut sink = Count::default();
    let format = ingest(std::fs::File::open(&path)?, &Limits::default(), &mut sink)?;
    println!(
        "{path}: {} ({} exchanges, {} problems)",
        format.as_str(),
        sink.exchanges,
        sink.problems
    );
    Ok(())
}
