//! Vocabulary shared by every stage: timestamps, locators, the exchange, SSE events,
//! the verdict types (`Outcome`, `Layer`) and findings. No I/O and no parsing of
//! formats lives here; a stage may use the model, the model uses no stage.

mod exchange;
mod time;
mod verdict;

pub use exchange::*;
pub use time::Timestamp;
pub use verdict::*;
