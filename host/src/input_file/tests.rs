use std::time::Duration;

use super::*;

/// `f(path)` on a thread: a reader that waits on a fifo fails the test instead of hanging it.
fn within_seconds<T: Send + 'static>(
    path: &Path,
    f: impl FnOnce(&Path) -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    let path = path.to_owned();
    std::thread::spawn(move || tx.send(f(&path)));
    rx.recv_timeout(Duration::from_secs(20))
        .expect("reading the file waits")
}

#[test]
fn a_file_at_the_bound_is_read_and_one_byte_more_is_too_large() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, [7u8; 4096]).unwrap();
    assert_eq!(read(&path, 4096).unwrap(), [7u8; 4096]);
    let e = read(&path, 4095).unwrap_err();
    assert!(
        matches!(e, InputFileError::TooLarge { max: 4095, .. }),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "{}: larger than 4095 bytes, more than such a file ever needs",
            path.display()
        )
    );
    assert!(read(&path, 0).is_err());
    std::fs::write(&path, b"").unwrap();
    assert_eq!(read(&path, 0).unwrap(), b"");
}

#[test]
fn a_directory_is_not_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let e = read(dir.path(), 10).unwrap_err();
    assert!(matches!(e, InputFileError::NotAFile { .. }), "{e}");
    assert!(matches!(
        open(dir.path()),
        Err(InputFileError::NotAFile { .. })
    ));
}

#[cfg(target_os = "linux")]
#[test]
fn a_fifo_is_refused_at_once_rather_than_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::RUSR).unwrap();
    let e = within_seconds(&fifo, |p| read(p, 1 << 20)).unwrap_err();
    assert!(matches!(e, InputFileError::NotAFile { .. }), "{e}");
    assert!(
        e.to_string().starts_with(&fifo.display().to_string()),
        "{e}"
    );
    let e = within_seconds(&fifo, |p| open(p).map(drop)).unwrap_err();
    assert!(matches!(e, InputFileError::NotAFile { .. }), "{e}");
}

#[cfg(target_os = "linux")]
#[test]
fn an_endless_device_is_refused_even_through_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("zero.wasm");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    for path in [Path::new("/dev/zero"), Path::new("/dev/urandom"), &link] {
        let e = within_seconds(path, |p| read(p, 1 << 20)).unwrap_err();
        assert!(matches!(e, InputFileError::NotAFile { .. }), "{e}");
        assert_eq!(e.path(), path);
    }
}

#[test]
fn a_missing_file_says_its_cause_once_and_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing");
    let e = read(&path, 10).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, InputFileError::Io { .. }), "{text}");
    assert!(
        text.starts_with(&format!("{}: cannot read: ", path.display())),
        "{text}"
    );
    assert!(std::error::Error::source(&e).is_none(), "{text}");
}

#[test]
fn text_that_is_not_utf8_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    std::fs::write(&path, b"ok\n\xff").unwrap();
    let e = read_text(&path, 10).unwrap_err();
    assert!(e.to_string().ends_with("not UTF-8 text (byte 3)"), "{e}");
    std::fs::write(&path, "ok\n").unwrap();
    assert_eq!(read_text(&path, 10).unwrap(), "ok\n");
}

#[test]
fn sizes_are_said_in_the_largest_whole_unit() {
    assert_eq!(Bytes(64 << 20).to_string(), "64 MiB");
    assert_eq!(Bytes(4 << 10).to_string(), "4 KiB");
    assert_eq!(Bytes((1 << 20) + 1).to_string(), "1048577 bytes");
    assert_eq!(Bytes(0).to_string(), "0 bytes");
}
