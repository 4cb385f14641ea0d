//! A byte meter between a buffered reader and `serde_json`: it lets a streaming
//! reader cap one record (a JSON-array element) before serde buffers it.
//! serde_json keeps a string or a `RawValue` whole while it reads it, so the only way
//! to stop a 300 MB element before it is allocated is to refuse its bytes.

use std::cell::Cell;
use std::io::{self, BufReader, Read};
use std::rc::Rc;

/// The buffer above the meter. serde_json reads one byte at a time, which std makes
/// fast only on a `BufReader`; so the meter sits below a small one and counts in steps
/// of at most this many bytes (a record is refused within this much of its cap).
const STEP: usize = 512;

/// `inner`, metered, with a small buffer on top for serde_json's byte-at-a-time reads.
pub(crate) fn metered<R: Read>(inner: R, meter: Rc<Meter>) -> BufReader<Metered<R>> {
    BufReader::with_capacity(STEP, Metered::new(inner, meter))
}

/// Shared between the reader and the visitor that marks where each record starts.
#[derive(Debug, Default)]
pub(crate) struct Meter {
    /// Bytes read since the record began; `None` while no record is being read.
    used: Cell<Option<u64>>,
    cap: u64,
    tripped: Cell<bool>,
}

impl Meter {
    pub(crate) fn new(cap: u64) -> Rc<Meter> {
        Rc::new(Meter {
            used: Cell::new(None),
            cap,
            tripped: Cell::new(false),
        })
    }

    /// A record begins with the next byte.
    pub(crate) fn start(&self) {
        self.used.set(Some(0));
    }

    /// Between records: bytes are not counted.
    pub(crate) fn stop(&self) {
        self.used.set(None);
    }

    /// True once a record went past the cap (the reader then failed).
    pub(crate) fn tripped(&self) -> bool {
        self.tripped.get()
    }

    pub(crate) fn cap(&self) -> u64 {
        self.cap
    }
}

/// A reader that fails once the record being read grows past its meter's cap.
pub(crate) struct Metered<R> {
    inner: R,
    meter: Rc<Meter>,
}

impl<R> Metered<R> {
    pub(crate) fn new(inner: R, meter: Rc<Meter>) -> Metered<R> {
        Metered { inner, meter }
    }
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(used) = self.meter.used.get() else {
            return self.inner.read(buf);
        };
        let room = self.meter.cap.saturating_sub(used);
        if room == 0 {
            self.meter.tripped.set(true);
            return Err(io::Error::other(format!(
                "a record is larger than the {}-byte cap",
                self.meter.cap
            )));
        }
        let want = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.meter.used.set(Some(used + n as u64));
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_inside_a_record_and_trips_past_the_cap() {
        let meter = Meter::new(4);
        let mut r = Metered::new(&b"0123456789"[..], meter.clone());
        let mut buf = [0u8; 3];
        assert_eq!(r.read(&mut buf).unwrap(), 3, "not metered before start");
        meter.start();
        let mut big = [0u8; 10];
        assert_eq!(r.read(&mut big).unwrap(), 4, "reads stop at the cap");
        assert!(r.read(&mut big).is_err());
        assert!(meter.tripped());
        meter.stop();
        assert_eq!(r.read(&mut big).unwrap(), 3);
    }
}
