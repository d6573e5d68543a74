//! Property tests over the real binary: `--json` at every position and `-q`
//! anywhere, flags interleaved with positionals, arbitrary VM names and sizes: every run keeps
//! the contract (`TestEnv::json_raw` checks lines, one result last, schemas, exit status, no
//! planted password). exec: the guest argv reaches ssh untouched (a POSIX shell splits the
//! remote command back into exactly that argv), and arbitrary bytes from ssh come back
//! exactly, plain or base64, per stream. Few cases (32) to keep `cargo test` fast.

use base64::Engine as _;
use proptest::prelude::*;

use crate::common::{banner_port, FakeRunningVm, TestEnv, PLANTED_PASSWORD};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 32,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A VM name: mostly plausible, sometimes anything printable (flags and junk included).
fn vm_name() -> impl Strategy<Value = String> + Clone {
    prop_oneof![
        4 => "[a-z][a-z0-9-]{0,12}",
        1 => "\\PC{0,10}",
    ]
}

/// A size or count: mostly well-formed, sometimes junk.
fn size() -> impl Strategy<Value = String> + Clone {
    prop_oneof![
        3 => "[0-9]{1,7}[KMGT]?",
        1 => "\\PC{0,8}",
    ]
}

/// One command line (without `--json`) and the `cmd` its result must carry.
fn command_line() -> impl Strategy<Value = (Vec<String>, &'static str)> {
    let name = vm_name();
    prop_oneof![
        Just((vec!["ls".to_string()], "ls")),
        name.clone().prop_map(|n| (vec!["get".into(), n], "get")),
        (name.clone(), size())
            .prop_map(|(n, s)| (vec!["update".into(), n, "--ram".into(), s], "update")),
        (name.clone(), size())
            .prop_map(|(n, s)| (vec!["update".into(), "--disk".into(), s, n], "update")),
        (name.clone(), size(), size()).prop_map(|(n, ram, cpus)| (
            vec![
                "create".into(),
                "--ram".into(),
                ram,
                n,
                "--image".into(),
                "alpine-virt-3.20.3-x86_64.iso".into(),
                "--cpus".into(),
                cpus
            ],
            "create"
        )),
        name.clone()
            .prop_map(|n| (vec!["rm".into(), n, "-y".into()], "rm")),
        name.clone().prop_map(|n| (vec!["rm".into(), n], "rm")),
        (name.clone(), 1u32..70000, 1u32..70000)
            .prop_map(|(n, h, g)| (vec!["forward".into(), n, format!("{h}:{g}")], "forward")),
        name.clone()
            .prop_map(|n| (vec!["ssh-command".into(), n], "ssh-command")),
        name.clone()
            .prop_map(|n| (vec!["snapshot".into(), n], "snapshot")),
        (name.clone(), vm_name()).prop_map(|(a, b)| (vec!["clone".into(), a, b], "clone")),
        Just((vec!["version".to_string()], "version")),
    ]
}

/// A data root with a stopped live VM `work`, a broken VM and an image in isos/.
fn populated_env() -> TestEnv {
    let env = TestEnv::new();
    write_live_vm(&env, "work", 29401);
    env.write_broken_vm("bad");
    let isos = env.root().join("isos");
    std::fs::create_dir_all(&isos).unwrap();
    std::fs::write(isos.join("alpine-virt-3.20.3-x86_64.iso"), "fake iso\n").unwrap();
    env
}

fn write_live_vm(env: &TestEnv, name: &str, port: u16) {
    env.write_vm(
        name,
        &format!(
            "name = \"{name}\"\nmode = \"live\"\nos = \"alpine\"\nbackend = \"apkovl\"\niso = \"/nonexistent/x.iso\"\nram = 256\ncpus = 1\nsshport = {port}\nsshuser = \"root\"\nconsole_password = \"{PLANTED_PASSWORD}\"\n"
        ),
    );
}

/// What a POSIX shell makes of `remote`: the words it splits it into.
fn shell_words(remote: &str) -> Vec<String> {
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("printf '%s\\0' {remote}"))
        .output()
        .unwrap();
    assert!(output.status.success(), "sh rejected {remote:?}");
    let mut words: Vec<String> = output
        .stdout
        .split(|b| *b == 0)
        .map(|w| String::from_utf8(w.to_vec()).unwrap())
        .collect();
    words.pop(); // after the last NUL
    words
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_contract_holds_wherever_json_and_quiet_go(
        (line, cmd) in command_line(),
        json_at in any::<prop::sample::Index>(),
        quiet_at in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let env = populated_env();
        let mut args = line;
        if let Some(at) = quiet_at {
            args.insert(at.index(args.len() + 1), "-q".into());
        }
        args.insert(json_at.index(args.len() + 1), "--json".into());
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = env.json_raw(&argv);
        // A name that is itself a flag (or empty) may turn the line into another usage error,
        // but a recognised command always answers with its own cmd.
        if run.result["error"]["code"] != "usage" {
            prop_assert_eq!(&run.result["cmd"], cmd, "{:?}", args);
        }
    }

    #[test]
    fn exec_guest_argv_reaches_ssh_untouched(
        guest in proptest::collection::vec("\\PC{0,8}|--json|-q|'|\"|\\$x|;|\\\\", 1..6),
        quiet_first in any::<bool>(),
    ) {
        let env = TestEnv::new();
        write_live_vm(&env, "w", banner_port());
        let _running = FakeRunningVm::start(&env.root().join("w"));
        env.fake_tool("ssh");
        let mut args: Vec<String> = Vec::new();
        if quiet_first {
            args.push("-q".into());
        }
        args.extend(["--json".to_string(), "exec".into(), "w".into()]);
        args.extend(guest.iter().cloned());
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = env.json_raw(&argv);
        prop_assert_eq!(run.exit, 0, "{:?}", run.result);
        // stoat-fake's ssh logs the remote command as sshd would hand it to the guest's shell.
        let calls = env.fake_calls();
        let remote = calls
            .iter()
            .rev()
            .find(|call| call["tool"] == "ssh")
            .and_then(|call| call["remote_command"].as_str())
            .unwrap_or_default();
        // The guest's shell writes the session mark, then runs the quoted argv itself,
        // marked (`STOAT_EXEC=<mark> <argv>`, so a cancel can find it), its stderr the
        // session's and its stdin /dev/null under --json.
        let quoted = remote
            .split_once("STOAT_EXEC=")
            .and_then(|(_, rest)| rest.split_once(' '))
            .and_then(|(_, rest)| rest.rsplit_once(" 2>&4 4>&- </dev/null"))
            .map(|(quoted, _)| quoted)
            .unwrap_or_default();
        prop_assert_eq!(shell_words(quoted), guest);
    }

    #[test]
    fn exec_bytes_come_back_exactly_per_stream(
        out in proptest::collection::vec(any::<u8>(), 0..64),
        err in proptest::collection::vec(any::<u8>(), 0..64),
        status in 0u8..5,
    ) {
        let mut env = TestEnv::new();
        write_live_vm(&env, "w", banner_port());
        let _running = FakeRunningVm::start(&env.root().join("w"));
        env.fake_tool("ssh");
        env.fake_script(&serde_json::json!({"tools": {"ssh": [{
            "stdout": {"hex": hex::encode(&out)},
            "stderr": {"hex": hex::encode(&err)},
            "exit": status,
        }]}}));
        let run = env.json_raw(&["--json", "exec", "w", "true"]);
        prop_assert_eq!(run.exit, 0);
        let data = run.data();
        prop_assert_eq!(&data["exit_code"], status);
        for (stream, expected) in [("stdout", &out), ("stderr", &err)] {
            let got = match data.get(format!("{stream}_base64")) {
                Some(encoded) => {
                    prop_assert_eq!(&data[format!("{stream}_encoding")], "base64");
                    prop_assert!(std::str::from_utf8(expected).is_err(), "base64 only for non-UTF-8");
                    base64::engine::general_purpose::STANDARD
                        .decode(encoded.as_str().unwrap())
                        .unwrap()
                }
                None => data[stream].as_str().unwrap().as_bytes().to_vec(),
            };
            prop_assert_eq!(&got, expected, "{}", stream);
        }
    }
}
