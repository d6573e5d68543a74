//! The ssh and scp argv stoat runs against a VM, and the quoting of a remote command: pure
//! functions, reused by ssh-command, ssh, exec and cp (docs/contract.md behaviour#ssh).
//!
//! The key path `<root>/id_stoat` is a host path; it is part of the argv on purpose, because an
//! argv without it cannot log in (docs/decisions/host.md).

use std::path::Path;

use crate::vm::StoredVm;

/// The `-o` options every ssh and scp call carries: no host-key prompts or records (the guest
/// key changes with every fresh VM), quiet, bounded connect, never a password prompt.
pub const SSH_OPTIONS: &[&str] = &[
    "StrictHostKeyChecking=no",
    "UserKnownHostsFile=/dev/null",
    "LogLevel=ERROR",
    "ConnectTimeout=5",
    "BatchMode=yes",
];

/// The login `<user>@127.0.0.1` (user `root` when vm.toml names none).
pub fn login(vm: &StoredVm) -> String {
    format!("{}@127.0.0.1", vm.config.ssh_user())
}

fn options() -> impl Iterator<Item = String> {
    SSH_OPTIONS
        .iter()
        .flat_map(|option| ["-o".to_owned(), (*option).to_owned()])
}

/// Returns the ssh arguments (without the leading `ssh`):
/// `-p P -o ... -i <root>/id_stoat <user>@127.0.0.1`.
pub fn ssh_args(key: &Path, vm: &StoredVm) -> Vec<String> {
    ssh_args_with(key, vm, &[])
}

/// [`ssh_args`] with `extra` options (a connection route's, a login's bound) ahead of the
/// common ones: ssh keeps the first value it reads for an option, so a caller's wins.
pub fn ssh_args_with(key: &Path, vm: &StoredVm, extra: &[String]) -> Vec<String> {
    let mut args = vec!["-p".to_owned(), vm.config.sshport.to_string()];
    args.extend(extra.iter().cloned());
    args.extend(options());
    args.push("-i".to_owned());
    args.push(key.display().to_string());
    args.push(login(vm));
    args
}

/// Returns the full argv `["ssh", ...ssh_args]`, as `ssh-command` reports it.
pub fn ssh_argv(key: &Path, vm: &StoredVm) -> Vec<String> {
    std::iter::once("ssh".to_owned())
        .chain(ssh_args(key, vm))
        .collect()
}

/// Returns the scp arguments (without the leading `scp`) up to, not including, the two
/// endpoints: `-P P -q -o ... -i <key>`. Append `src dst`; the remote endpoint is
/// [`remote_spec`] and is not shell-quoted (scp's SFTP mode passes it verbatim).
#[cfg(test)]
pub fn scp_args(key: &Path, vm: &StoredVm) -> Vec<String> {
    scp_args_with(key, vm, &[])
}

/// [`scp_args`] with `extra` options ahead of the common ones (a connection route's; ssh keeps
/// the first value of an option).
pub fn scp_args_with(key: &Path, vm: &StoredVm, extra: &[String]) -> Vec<String> {
    let mut args = vec![
        "-P".to_owned(),
        vm.config.sshport.to_string(),
        "-q".to_owned(),
    ];
    args.extend(extra.iter().cloned());
    args.extend(options());
    args.push("-i".to_owned());
    args.push(key.display().to_string());
    args
}

/// Returns `<user>@127.0.0.1:<remote>`.
pub fn remote_spec(vm: &StoredVm, remote: &str) -> String {
    format!("{}:{remote}", login(vm))
}

/// Quotes an argv into one string that a POSIX shell splits back into exactly that argv: each
/// element single-quoted, a `'` written as `'\''`, joined by spaces.
pub fn quote_remote_command(argv: &[String]) -> String {
    crate::shell::join(argv)
}

/// [`quote_remote_command`] on raw argv bytes: a word that is not UTF-8 reaches the guest's
/// shell byte for byte (single quotes protect every byte but `'` itself).
pub fn quote_remote_argv(argv: &[std::ffi::OsString]) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStringExt;
    let mut quoted = Vec::new();
    for (index, arg) in argv.iter().enumerate() {
        if index > 0 {
            quoted.push(b' ');
        }
        crate::shell::quote_bytes(arg.as_encoded_bytes(), &mut quoted);
    }
    std::ffi::OsString::from_vec(quoted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::VmConfig;
    use proptest::prelude::*;
    use std::path::PathBuf;
    use std::process::Command;

    fn vm(user: &str, port: u16) -> StoredVm {
        let config = VmConfig::parse(&format!(
            "name = \"w\"\nmode = \"cloud\"\nsshport = {port}\nsshuser = \"{user}\"\n"
        ))
        .unwrap();
        StoredVm {
            name: "w".into(),
            dir: PathBuf::from("/r/w"),
            config,
        }
    }

    #[test]
    fn ssh_argv_matches_upstream_order() {
        let argv = ssh_argv(Path::new("/r/id_stoat"), &vm("stoat", 2201));
        assert_eq!(
            argv.join(" "),
            "ssh -p 2201 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
             -o LogLevel=ERROR -o ConnectTimeout=5 -o BatchMode=yes -i /r/id_stoat stoat@127.0.0.1"
        );
    }

    #[test]
    fn empty_user_is_root() {
        let argv = ssh_args(Path::new("/k"), &vm("", 2200));
        assert_eq!(argv.last().unwrap(), "root@127.0.0.1");
    }

    #[test]
    fn scp_args_use_capital_p_and_quiet() {
        let mut args = scp_args(Path::new("/k"), &vm("u", 2202));
        args.push("/tmp/a".into());
        args.push(remote_spec(&vm("u", 2202), "/tmp/b c"));
        assert_eq!(&args[..3], &["-P", "2202", "-q"]);
        assert_eq!(args.last().unwrap(), "u@127.0.0.1:/tmp/b c");
    }

    #[test]
    fn quoting_examples() {
        let argv: Vec<String> = ["echo", "it's", ""].iter().map(|s| s.to_string()).collect();
        assert_eq!(quote_remote_command(&argv), r"'echo' 'it'\''s' ''");
    }

    #[test]
    fn raw_bytes_survive_the_shell() {
        use std::os::unix::ffi::{OsStrExt, OsStringExt};
        let argv = vec![
            std::ffi::OsString::from_vec(b"a\xff'b".to_vec()),
            std::ffi::OsString::from("c d"),
        ];
        let mut script = b"printf '%s\\0' ".to_vec();
        script.extend_from_slice(quote_remote_argv(&argv).as_bytes());
        let output = Command::new("/bin/sh")
            .arg("-c")
            .arg(std::ffi::OsStr::from_bytes(&script))
            .output()
            .unwrap();
        assert_eq!(output.stdout, b"a\xff'b\0c d\0");
    }

    /// Runs `sh -c "printf '%s\0' <quoted>"` and splits the NUL-separated output.
    fn shell_roundtrip(argv: &[String]) -> Vec<String> {
        let script = format!("printf '%s\\0' {}", quote_remote_command(argv));
        let output = Command::new("/bin/sh")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        assert!(output.status.success(), "{script}");
        let text = String::from_utf8(output.stdout).unwrap();
        let mut parts: Vec<String> = text.split('\0').map(str::to_owned).collect();
        parts.pop(); // after the last NUL
        parts
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn sh_reproduces_the_argv(
            argv in prop::collection::vec("[a-z '\"$`\\\\\n\t*?;&|()<>~#!{}\\[\\]=%-]{0,12}|\\PC{0,6}", 1..6)
        ) {
            let argv: Vec<String> = argv.into_iter().map(|a| a.replace('\0', "")).collect();
            prop_assert_eq!(shell_roundtrip(&argv), argv);
        }
    }
}
