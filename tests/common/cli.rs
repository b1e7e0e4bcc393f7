//! Running the `sliceops` binary in tests: with a deadline, optional resource limits (set with
//! `setrlimit` in the child before it runs), and the CLI's error contract checked.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one CLI call may take before it counts as a hang.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Resource limits of a child process.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    /// `RLIMIT_FSIZE`: the largest file it may write, in bytes.
    pub file_size: Option<u64>,
    /// `RLIMIT_AS`: its address space, in bytes.
    pub address_space: Option<u64>,
}

/// What a finished call did.
#[derive(Debug)]
pub struct Run {
    /// Exit code (`None` if killed by a signal).
    pub code: Option<i32>,
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// How long it ran.
    pub elapsed: Duration,
}

impl Run {
    /// `what`, the exit status and time, and both outputs, for a failure message.
    pub fn describe(&self, what: &str) -> String {
        self.describe_lines(what, usize::MAX)
    }

    /// The same with at most `limit` lines of stderr; backtraces keep the frames of this crate only.
    pub fn describe_lines(&self, what: &str, limit: usize) -> String {
        let stderr: Vec<&str> = self
            .stderr
            .lines()
            .filter(|l| !l.trim_start().starts_with("at /rustc") && !l.contains(" core::") && !l.contains(" std::"))
            .take(limit)
            .collect();
        format!(
            "{what}\n  exit code {:?}, signal {:?}, {:.2?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code,
            self.signal,
            self.elapsed,
            self.stdout,
            stderr.join("\n")
        )
    }

    /// The single `error: ...` line of a failed call (exit status 1, no other stderr line but warnings).
    pub fn error(&self) -> &str {
        assert_eq!(self.code, Some(1), "expected exit status 1\n{self:#?}");
        let lines: Vec<&str> = self.stderr.lines().filter(|l| !l.starts_with("warning: ")).collect();
        assert_eq!(lines.len(), 1, "expected one error line\n{self:#?}");
        assert!(lines[0].starts_with("error: "), "expected an error line\n{self:#?}");
        lines[0]
    }

    /// Asserts the call succeeded.
    pub fn ok(&self) -> &Self {
        assert_eq!(self.code, Some(0), "expected success\n{self:#?}");
        self
    }
}

/// A fresh, empty folder for one test.
pub fn scratch(group: &str, test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(group).join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `command` under `limits` to completion, killing it (and failing) at [`DEADLINE`].
pub fn run_command(command: Command, limits: Limits) -> Run {
    run_command_within(command, limits, DEADLINE)
}

/// Runs `command` under `limits` to completion, killing it (and failing, with what it printed) at
/// `deadline`.
pub fn run_command_within(mut command: Command, limits: Limits, deadline: Duration) -> Run {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // Safety: the closure runs in the forked child before exec and only calls setrlimit, which is
    // async-signal-safe; it allocates nothing and touches no lock.
    unsafe {
        command.pre_exec(move || {
            let set = |resource, value: Option<u64>| {
                if let Some(v) = value {
                    let limit = libc::rlimit { rlim_cur: v as libc::rlim_t, rlim_max: v as libc::rlim_t };
                    if libc::setrlimit(resource, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            };
            set(libc::RLIMIT_FSIZE, limits.file_size)?;
            set(libc::RLIMIT_AS, limits.address_space)
        });
    }
    let start = Instant::now();
    let mut child = command.spawn().expect("spawn");
    let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let read = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = vec![];
            let _ = pipe.read_to_end(&mut v);
            String::from_utf8_lossy(&v).into_owned()
        })
    };
    let (t_out, t_err) = (read(Box::new(out)), read(Box::new(err)));
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break Some(s);
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let run = Run {
        code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
        elapsed: start.elapsed(),
    };
    if status.is_none() {
        panic!("{}", run.describe(&format!("HANG: {command:?} did not finish within {deadline:?}; killed")));
    }
    run
}

/// Runs `sliceops` with `args` under `limits`.
pub fn sliceops_limited<S: AsRef<OsStr>>(args: &[S], limits: Limits) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sliceops"));
    command.args(args);
    run_command(command, limits)
}

/// Runs `sliceops` with `args`.
pub fn sliceops<S: AsRef<OsStr>>(args: &[S]) -> Run {
    sliceops_limited(args, Limits::default())
}

/// The names of the files in `dir`, sorted.
pub fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}
