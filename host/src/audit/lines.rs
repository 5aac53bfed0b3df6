//! Reading a log or a witness line by line without trusting its size.
//!
//! A record is small (its names are cut, its note is short), so a line longer than
//! [`MAX_LINE`] is not a record: whoever reads one stops there and names it, rather than
//! growing a buffer to the size of whatever file it was handed. The file itself must be a
//! regular one, opened without blocking ([`open`]): a fifo would hang the reader, a device
//! such as `/dev/urandom` holds no log.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use crate::input_file::{self, InputFileError};

/// The longest line, newline included, that a log or a witness may hold: 64 KiB.
pub const MAX_LINE: usize = 64 * 1024;

/// One line as read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Line<'a> {
    /// A whole line, without its newline.
    Whole(&'a [u8]),
    /// The file's last bytes, with no newline after them: a torn write.
    Torn(&'a [u8]),
    /// A line longer than [`MAX_LINE`]: reading stopped inside it.
    TooLong,
}

/// Reads lines of at most [`MAX_LINE`] bytes, counting them from 1.
pub(super) struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    number: usize,
}

impl<R: BufRead> Lines<R> {
    pub fn new(reader: R) -> Self {
        Self {
            reader,
            buf: Vec::new(),
            number: 0,
        }
    }

    /// The next line and its number, or `None` at the end of the file. After
    /// [`Line::TooLong`] the reader is left inside that line: stop reading.
    ///
    /// # Errors
    /// The read error.
    pub fn next_line(&mut self) -> io::Result<Option<(usize, Line<'_>)>> {
        self.buf.clear();
        loop {
            let available = match self.reader.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                self.number += 1;
                return Ok(Some((self.number, Line::Torn(&self.buf))));
            }
            let room = MAX_LINE - self.buf.len();
            let (take, whole) = match available.iter().position(|&b| b == b'\n') {
                Some(i) if i < room => (i + 1, true),
                _ => (available.len().min(room), false),
            };
            self.buf.extend_from_slice(&available[..take]);
            self.reader.consume(take);
            if whole {
                self.number += 1;
                let text = &self.buf[..self.buf.len() - 1];
                return Ok(Some((self.number, Line::Whole(text))));
            }
            if self.buf.len() >= MAX_LINE {
                self.number += 1;
                return Ok(Some((self.number, Line::TooLong)));
            }
        }
    }
}

/// The lines of the regular file at `path`, opened without blocking.
///
/// # Errors
/// [`InputFileError`] naming the file: missing, unreadable, or not a regular file.
pub(super) fn open(path: &Path) -> Result<Lines<BufReader<File>>, InputFileError> {
    input_file::open(path).map(|f| Lines::new(BufReader::new(f)))
}

/// A read error of [`Lines::next_line`] on the file at `path`, said as [`open`]'s are.
pub(super) fn read_error(path: &Path) -> impl Fn(io::Error) -> InputFileError + '_ {
    move |error| InputFileError::Io {
        path: path.to_owned(),
        error,
    }
}

/// What a reader says of a line that is too long.
pub(super) fn too_long() -> String {
    format!("longer than {MAX_LINE} bytes: not a record")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(data: &[u8]) -> Vec<String> {
        let mut lines = Lines::new(BufReader::with_capacity(7, data));
        let mut out = Vec::new();
        loop {
            match lines.next_line().unwrap() {
                None => return out,
                Some((n, Line::Whole(t))) => out.push(format!("{n} whole {}", t.len())),
                Some((n, Line::Torn(t))) => out.push(format!("{n} torn {}", t.len())),
                Some((n, Line::TooLong)) => {
                    out.push(format!("{n} too long"));
                    return out;
                }
            }
        }
    }

    #[test]
    fn lines_are_split_across_small_reads_and_a_torn_end_is_told_apart() {
        assert_eq!(
            all(b"abc\n0123456789abcdef\n\nxy"),
            ["1 whole 3", "2 whole 16", "3 whole 0", "4 torn 2"]
        );
        assert_eq!(all(b""), Vec::<String>::new());
    }

    #[test]
    fn a_line_at_the_limit_is_read_and_one_byte_more_is_refused() {
        let mut data = vec![b'a'; MAX_LINE - 1];
        data.push(b'\n');
        data.extend_from_slice(&[b'b'; MAX_LINE]);
        data.push(b'\n');
        assert_eq!(
            all(&data),
            [format!("1 whole {}", MAX_LINE - 1), "2 too long".into()]
        );
    }

    #[test]
    fn an_endless_line_stops_at_the_limit() {
        let mut zeros = Lines::new(BufReader::new(io::repeat(0)));
        assert_eq!(zeros.next_line().unwrap(), Some((1, Line::TooLong)));
    }
}
