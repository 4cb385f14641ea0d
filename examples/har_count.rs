//! Reads one input through the ingest stage alone and counts what comes out, so the
//! reader's own memory can be measured apart from the analysis (`docs/har.md`):
//!
//!     cargo build --release --example har_count
//!     /usr/bin/time -v target/release/examples/har_count big.har

use mcpsift::config::Limits;
use mcpsift::ingest::{ingest, Problem, Sink};
use mcpsift::model::Exchange;

#[derive(Default)]
struct Count {
    exchanges: u64,
    problems: u64,
}

impl Sink for Count {
    fn exchange(&mut self, _x: Exchange) {
        self.exchanges += 1;
    }
    fn problem(&mut self, _p: Problem) {
        self.problems += 1;
    }
}

fn main() -> anyhow::Result<()> {
    let path = std::env::args()
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("usage: har_count FILE"))?;
    let mut count = Count::default();
    let format = ingest(std::fs::File::open(&path)?, &Limits::default(), &mut count)?;
    println!(
        "{path}: {} input, {} exchanges, {} problems",
        format.as_str(),
        count.exchanges,
        count.problems
    );
    Ok(())
}
