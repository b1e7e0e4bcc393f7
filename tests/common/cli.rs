//! Running the `sliceops` binary in tests: with a deadline, optional resource limits (set with
//! `setrlimit` in the child before it runs), and the CLI's error contract checked.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::process::CommandExt;
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
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
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
pub fn run_command(mut command: Command, limits: Limits) -> Run {
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
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("HANG: {command:?} did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run { code: status.code(), stdout: t_out.join().unwrap(), stderr: t_err.join().unwrap() }
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
