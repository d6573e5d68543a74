//! The guest's network through the real binary.
//!
//! FAKE tier: `up` starts the VM's network process (passt, here stoat-fake's) and the network
//! guard between it and QEMU, and `down` leaves none of them running; with the opt-in there is
//! no guard; a VM without passt on PATH is refused naming the package.
//! REAL tier (ignored unless asked for; the conformance test guest STOAT_REAL_GUEST names):
//! from inside a booted guest, a server bound to the host's 127.0.0.1 and the VM's own ssh
//! forward seen through the gateway are unreachable, while the VM's ssh and a user forward
//! work from the host, and the guest reaches a host server on a non-loopback address. With
//! `update --host-loopback` the loopback server is reachable. A TCP SYN the guest's root writes
//! as a raw frame (raw_syn.c) for 127.0.0.1 or 0.0.0.0 reaches nothing on the host, while the
//! same frame for the host's outbound address arrives; with the opt-in the loopback one does.
//! The outside, by name, is a test of its own: it also needs a host that reaches it, and fails
//! naming that when it does not.

use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::Duration;

use crate::common::{fake_booted_qemu, free_port, real_guest, timed, RealGuard, Reaper, TestEnv};

/// The PID in `<vm>/<pidfile>` when its process's cmdline names the VM directory.
fn live_pid(vm_dir: &Path, pidfile: &str) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(vm_dir.join(pidfile))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    String::from_utf8_lossy(&cmdline)
        .contains(&format!("{}/", vm_dir.display()))
        .then_some(pid)
}

/// The PIDs of the network guards standing before `<vm_dir>/n.sock`.
fn net_guards(vm_dir: &Path) -> Vec<u32> {
    crate::common::pids_with_cmdline(&format!("__net-guard\0{}/n.sock", vm_dir.display()))
}

fn write_fake_vm(env: &TestEnv, name: &str, port: u16, forward: u16) {
    env.write_vm(
        name,
        &format!(
            "name = \"{name}\"\nmode = \"live\"\nos = \"alpine\"\nbackend = \"apkovl\"\niso = \"isos/alpine-virt-3.20.3-x86_64.iso\"\nram = 256\ncpus = 1\nsshport = {port}\nsshuser = \"root\"\n\n[[forwards]]\nhostport = {forward}\nguestport = 80\n"
        ),
    );
    env.plant_image("alpine-virt-3.20.3-x86_64.iso");
    env.seed_boot_files(name);
}

#[test]
fn up_starts_the_network_beside_qemu_and_down_stops_both() {
    let env = TestEnv::new();
    fake_booted_qemu(&env);
    let _reaper = Reaper::watch(&env, &["n1"]);
    let (port, forward) = (free_port(), free_port());
    write_fake_vm(&env, "n1", port, forward);
    let vm_dir = env.root().join("n1");
    env.json(&["up", "n1"]);
    let passt = live_pid(&vm_dir, "passt.pid").expect("passt runs while the VM does");
    // The ssh port and the forward are passt's, on 127.0.0.1 only, and the gateway is cut
    // from the host's loopback (no opt-in).
    let argv = env.fake_argvs("passt").pop().expect("passt was run");
    assert!(argv.contains(&"--no-map-gw".to_owned()), "{argv:?}");
    let rules: Vec<&str> = argv
        .windows(2)
        .filter(|pair| pair[0] == "-t")
        .map(|pair| pair[1].as_str())
        .collect();
    assert_eq!(
        rules,
        [
            format!("127.0.0.1/{port}:22"),
            format!("127.0.0.1/{forward}:80")
        ]
    );
    let qemu_argv = env.fake_argvs("qemu-system-x86_64").pop().unwrap();
    assert!(
        !qemu_argv.iter().any(|arg| arg.contains("hostfwd")),
        "{qemu_argv:?}"
    );
    let shown = env.json(&["forward", "n1"]);
    assert_eq!(shown.data()["active"], true, "passt has the saved forwards");
    // QEMU reaches passt through the guard, whose socket's name goes once QEMU is in.
    assert!(
        qemu_argv
            .iter()
            .any(|arg| arg.ends_with(&format!("addr.path={}/g.sock", vm_dir.display()))),
        "{qemu_argv:?}"
    );
    assert_eq!(net_guards(&vm_dir).len(), 1, "one guard for the boot");
    assert!(!vm_dir.join("g.sock").exists());
    // The guard's note: the fake guest's first frame is ARP-typed with a non-zero sender field.
    assert_eq!(
        std::fs::read_to_string(vm_dir.join("net-state")).unwrap(),
        "addressed"
    );
    env.json(&["down", "n1"]);
    crate::common::eventually(Duration::from_secs(10), || net_guards(&vm_dir).is_empty());
    assert_eq!(live_pid(&vm_dir, "qemu.pid"), None);
    assert!(
        !Path::new(&format!("/proc/{passt}")).exists() || live_pid(&vm_dir, "passt.pid").is_none(),
        "passt {passt} still runs after down"
    );
    assert!(std::fs::read(format!("/proc/{passt}/cmdline"))
        .map(|c| !String::from_utf8_lossy(&c).contains(&*vm_dir.to_string_lossy()))
        .unwrap_or(true));

    // The opt-in drops --no-map-gw at the next start.
    let update = env.json(&["update", "n1", "--host-loopback"]);
    assert_eq!(
        update.data()["changed"],
        serde_json::json!(["host_loopback"])
    );
    assert_eq!(update.data()["applies_at"], "now");
    env.json(&["up", "n1"]);
    let argv = env.fake_argvs("passt").pop().unwrap();
    assert!(!argv.contains(&"--no-map-gw".to_owned()), "{argv:?}");
    // ... and the guard: QEMU connects to passt itself.
    let qemu_argv = env.fake_argvs("qemu-system-x86_64").pop().unwrap();
    assert!(
        qemu_argv
            .iter()
            .any(|arg| arg.ends_with(&format!("addr.path={}/n.sock", vm_dir.display()))),
        "{qemu_argv:?}"
    );
    assert!(net_guards(&vm_dir).is_empty());
    // No guard, no note: the last boot's would hold this boot's logins back.
    assert!(!vm_dir.join("net-state").exists());
    env.json(&["down", "n1"]);
    let back = env.json(&["update", "n1", "--host-loopback=false"]);
    assert_eq!(back.data()["changed"], serde_json::json!(["host_loopback"]));
}

#[test]
fn up_without_passt_says_which_package_and_starts_nothing() {
    let mut env = TestEnv::new();
    env.fake_host_tools();
    fake_booted_qemu(&env);
    let _reaper = Reaper::watch(&env, &["n2"]);
    std::fs::remove_file(env.bin().join("passt")).unwrap();
    // Only the fakes: this host's own passt must not be found either.
    let bin = env.bin().display().to_string();
    env.set_env("PATH", &bin);
    write_fake_vm(&env, "n2", free_port(), free_port());
    let message = env.json(&["up", "n2"]).error("internal");
    assert!(message.contains("install passt"), "{message}");
    assert!(env.fake_argvs("qemu-system-x86_64").is_empty());
    let doctor = env.json(&["doctor"]);
    let check = doctor.data()["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|check| check["name"] == "passt")
        .cloned()
        .expect("doctor checks passt");
    assert_eq!(check["ok"], false, "{check}");
}

// ---- REAL tier ----------------------------------------------------------------------------

/// An HTTP server on `addr` answering every request with `body`, in a thread of this test
/// (it ends with the test process); returns its port. The answer goes in one write, then the
/// server half-closes and reads until the client closes: a socket closed with unread bytes
/// sends a reset, and a reset can overtake the end of the answer on its way into the guest
/// (the Debian session once got the headers without the body).
pub(crate) fn http_server(addr: IpAddr, body: &'static str) -> u16 {
    let listener = TcpListener::bind((addr, 0)).expect("bind the host server");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut request = [0u8; 1024];
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = stream.read(&mut request);
            let answer = format!(
                "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes());
            let _ = stream.shutdown(std::net::Shutdown::Write);
            let _ = std::io::copy(&mut stream, &mut std::io::sink());
        }
    });
    port
}

/// The host's own address on the interface of its default route (no packet is sent).
pub(crate) fn host_outbound_address() -> Option<IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("198.51.100.1:9").ok()?;
    let addr = socket.local_addr().ok()?.ip();
    (!addr.is_loopback() && !addr.is_unspecified()).then_some(addr)
}

/// The body of what the guest fetched with a GET of `path` from `addr`:`port` (busybox `nc`;
/// the test guest's static `wget` crashes), or None when it got no HTTP answer. The request
/// side stays open a while: some HTTP proxies drop a client that half-closes before they answer.
fn guest_fetch(
    env: &TestEnv,
    vm: &str,
    addr: &str,
    port: u16,
    host: &str,
    path: &str,
) -> Option<String> {
    let run = env.json_raw(&[
        "--json",
        "exec",
        vm,
        "sh",
        "-c",
        &format!(
            "(printf 'GET {path} HTTP/1.1\\r\\nHost: {host}\\r\\nConnection: close\\r\\n\\r\\n'; sleep 2) | timeout 8 nc {addr} {port}"
        ),
    ]);
    let answer = run.data()["stdout"].as_str().unwrap_or("").to_owned();
    if !answer.starts_with("HTTP/1.") {
        return None;
    }
    Some(
        answer
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_owned())
            .unwrap_or_default(),
    )
}

/// True when the guest's `nc` hears an SSH banner from 10.0.2.2:`port` within a few seconds
/// (busybox `nc -w` does not bound a connect that is never answered; `timeout` does).
fn guest_hears_banner(env: &TestEnv, vm: &str, port: u16) -> bool {
    let run = env.json_raw(&[
        "--json",
        "exec",
        vm,
        "sh",
        "-c",
        &format!("(sleep 3) | timeout 6 nc 10.0.2.2 {port} | head -c 4"),
    ]);
    run.data()["stdout"]
        .as_str()
        .unwrap_or("")
        .starts_with("SSH")
}

/// The raw-frame probe (raw_syn.c), built static on the host.
const RAW_SYN_C: &str = include_str!("raw_syn.c");

/// Builds the raw-frame probe on the host and copies it into `vm` as /tmp/raw_syn.
pub(crate) fn put_raw_syn(env: &TestEnv, vm: &str) {
    let source = env.tmp().join("raw_syn.c");
    let binary = env.tmp().join("raw_syn");
    std::fs::write(&source, RAW_SYN_C).unwrap();
    let built = std::process::Command::new("cc")
        .args(["-static", "-O2", "-o"])
        .arg(&binary)
        .arg(&source)
        .output()
        .expect("a C compiler on the host (make setup installs gcc and libc6-dev)");
    assert!(
        built.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    env.json(&[
        "cp",
        &binary.display().to_string(),
        &format!("{vm}:/tmp/raw_syn"),
    ])
    .data();
}

/// Has the guest's root write a TCP SYN for `addr`:`port` as a raw frame (put_raw_syn first).
pub(crate) fn guest_raw_syn(env: &TestEnv, vm: &str, addr: &str, port: u16) {
    let run = env.json_raw(&[
        "--json",
        "exec",
        vm,
        "sh",
        "-c",
        &format!("chmod +x /tmp/raw_syn && sudo -n /tmp/raw_syn {addr} {port}"),
    ]);
    assert_eq!(run.data()["stdout"], "sent\n", "{}", run.stdout);
}

/// Whether a connection reaches `listener` within `within` (polled, the listener made
/// non-blocking).
pub(crate) fn accepts_within(listener: &TcpListener, within: Duration) -> bool {
    listener.set_nonblocking(true).unwrap();
    let deadline = std::time::Instant::now() + within;
    loop {
        if listener.accept().is_ok() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A raw SYN from the guest's root for the host's loopback (127.0.0.1, and 0.0.0.0, which the
/// host takes for itself) reaches nothing, while the same frame for `outbound` arrives: the
/// control that the frame is sound.
pub(crate) fn raw_frames_reach_the_outside_but_not_the_host_loopback(
    env: &TestEnv,
    vm: &str,
    outbound: IpAddr,
) {
    let control = TcpListener::bind((outbound, 0)).unwrap();
    let port = control.local_addr().unwrap().port();
    guest_raw_syn(env, vm, &outbound.to_string(), port);
    assert!(
        accepts_within(&control, Duration::from_secs(10)),
        "the control: a raw SYN for the host's outbound address {outbound} never arrived"
    );
    for target in ["127.0.0.1", "0.0.0.0"] {
        let loopback = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = loopback.local_addr().unwrap().port();
        guest_raw_syn(env, vm, target, port);
        assert!(
            !accepts_within(&loopback, Duration::from_secs(3)),
            "a raw frame from the guest reached the host's loopback ({target})"
        );
    }
}

#[test]
#[ignore = "needs STOAT_REAL_GUEST"]
fn real_guest_reaches_the_outside_and_its_forwards_but_not_the_host_loopback() {
    let guest = real_guest();
    let env = TestEnv::new();
    let port = free_port();
    let forward = free_port();
    env.write_vm(
        "net1",
        &format!(
            "name = \"net1\"\nmode = \"cloud\"\nos = \"\"\nbackend = \"cloudinit\"\nram = 256\ncpus = 1\ndisk = \"256M\"\nsshport = {port}\nsshuser = \"stoat\"\nbase = \"{}\"\n\n[[forwards]]\nhostport = {forward}\nguestport = 8000\n",
            guest.image.display()
        ),
    );
    let vm_dir = env.root().join("net1");
    let _guard = RealGuard(vm_dir.clone());
    let loopback_port = http_server(IpAddr::from([127, 0, 0, 1]), "host-loopback");
    let up = timed("up", || env.run(&["up", "net1"]));
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    // The guard saw the guest's frames from its address (the login's reply at the latest).
    assert_eq!(
        std::fs::read_to_string(vm_dir.join("net-state")).unwrap(),
        "addressed"
    );

    // The stoat forwards work: ssh (exec ran) and a user forward to a guest server.
    let serve = env.json_raw(&[
        "--json",
        "exec",
        "net1",
        "sh",
        "-c",
        "mkdir -p /tmp/www && echo guest-web > /tmp/www/index.html && busybox httpd -p 8000 -h /tmp/www && echo started",
    ]);
    assert_eq!(serve.data()["stdout"], "started\n", "{}", serve.stdout);
    let mut page = String::new();
    let mut stream = TcpStream::connect(("127.0.0.1", forward)).expect("the forward listens");
    stream
        .write_all(b"GET /index.html HTTP/1.0\r\n\r\n")
        .unwrap();
    stream.read_to_string(&mut page).unwrap();
    assert!(page.ends_with("guest-web\n"), "{page}");

    // The host's loopback is not reachable through the gateway: neither a server bound there
    // nor the VM's own ssh forward (what another VM's ssh port would be too).
    assert_eq!(
        timed("guest -> host loopback", || guest_fetch(
            &env,
            "net1",
            "10.0.2.2",
            loopback_port,
            "10.0.2.2",
            "/"
        )),
        None
    );
    assert!(!guest_hears_banner(&env, "net1", port));
    // Nor a neighbour: a second VM's ssh forward, the door its key would open.
    let neighbour_port = free_port();
    env.write_vm(
        "net2",
        &format!(
            "name = \"net2\"\nmode = \"cloud\"\nos = \"\"\nbackend = \"cloudinit\"\nram = 256\ncpus = 1\ndisk = \"256M\"\nsshport = {neighbour_port}\nsshuser = \"stoat\"\nbase = \"{}\"\n",
            guest.image.display()
        ),
    );
    let _neighbour = RealGuard(env.root().join("net2"));
    // up answers once it has logged in through that forward: it is there on the host.
    env.json(&["up", "net2"]).data();
    assert!(!guest_hears_banner(&env, "net1", neighbour_port));
    env.json(&["down", "net2"]).data();

    // The guest still reaches the host's other addresses, the way out.
    let outbound = host_outbound_address().expect("this host has a non-loopback address");
    let public_port = http_server(outbound, "host-public");
    assert_eq!(
        guest_fetch(
            &env,
            "net1",
            &outbound.to_string(),
            public_port,
            "host",
            "/"
        )
        .as_deref(),
        Some("host-public")
    );

    // Nor by a raw frame the guest's root writes for the host's loopback itself.
    put_raw_syn(&env, "net1");
    raw_frames_reach_the_outside_but_not_the_host_loopback(&env, "net1", outbound);

    let passt = live_pid(&vm_dir, "passt.pid").expect("passt runs");
    env.json(&["down", "net1"]);
    assert!(
        live_pid(&vm_dir, "passt.pid").is_none(),
        "passt {passt} outlived down"
    );

    // The opt-in: the guest reaches the host's loopback through its gateway.
    let update = env.json(&["update", "net1", "--host-loopback"]);
    assert_eq!(
        update.data()["changed"],
        serde_json::json!(["host_loopback"])
    );
    let up = timed("up (host loopback)", || env.run(&["up", "net1"]));
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    assert_eq!(
        guest_fetch(&env, "net1", "10.0.2.2", loopback_port, "10.0.2.2", "/").as_deref(),
        Some("host-loopback")
    );
    assert!(guest_hears_banner(&env, "net1", port));
    let loopback = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let raw_port = loopback.local_addr().unwrap().port();
    put_raw_syn(&env, "net1");
    guest_raw_syn(&env, "net1", "127.0.0.1", raw_port);
    assert!(
        accepts_within(&loopback, Duration::from_secs(10)),
        "with the opt-in, a raw SYN for 127.0.0.1 connects"
    );
    env.json(&["down", "net1"]);
}

/// The outside, by name: the guest's DNS (10.0.2.3) is forwarded to the host's, and the way
/// out goes through the host. A test of its own, because it needs what a host may lack. The
/// outside server is the first plain-http mirror the host's own apt uses, so no host name is
/// written here.
#[test]
#[ignore = "needs STOAT_REAL_GUEST and a host whose apt mirror answers over plain http"]
fn real_guest_reaches_the_outside_by_name() {
    let (host, path) = apt_http_mirror()
        .expect("needs a plain-http mirror in the host's apt sources (/etc/apt/sources.list{,.d})");
    let outside = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), 80))
        .ok()
        .and_then(|mut addrs| addrs.find(|addr| addr.is_ipv4()))
        .filter(|addr| TcpStream::connect_timeout(addr, Duration::from_secs(5)).is_ok());
    assert!(
        outside.is_some(),
        "needs a host that reaches its apt mirror {host}:80 (outside HTTP); this one does not"
    );
    let guest = real_guest();
    let env = TestEnv::new();
    env.write_vm(
        "net2",
        &format!(
            "name = \"net2\"\nmode = \"cloud\"\nos = \"\"\nbackend = \"cloudinit\"\nram = 256\ncpus = 1\ndisk = \"256M\"\nsshport = {}\nsshuser = \"stoat\"\nbase = \"{}\"\n",
            free_port(),
            guest.image.display()
        ),
    );
    let _guard = RealGuard(env.root().join("net2"));
    timed("up", || env.json(&["up", "net2"])).data();
    let lookup = env.json_raw(&[
        "--json",
        "exec",
        "net2",
        "sh",
        "-c",
        &format!("nslookup {host} | awk '/^Address/ && !/#/ {{a=$NF}} END {{print a}}'"),
    ]);
    let resolved = lookup.data()["stdout"].as_str().unwrap().trim().to_owned();
    assert!(!resolved.is_empty(), "the guest's DNS: {}", lookup.stdout);
    let page = guest_fetch(&env, "net2", &resolved, 80, &host, &path);
    assert!(
        page.is_some(),
        "the guest cannot reach what the host reaches ({resolved})"
    );
    env.json(&["down", "net2"]);
}

/// The host and path of the first `http://` mirror in the host's apt sources (one-line
/// `deb http://…` entries or deb822 `URIs:` fields), with the path ending in `/`.
fn apt_http_mirror() -> Option<(String, String)> {
    let mut files = vec![std::path::PathBuf::from("/etc/apt/sources.list")];
    if let Ok(dir) = std::fs::read_dir("/etc/apt/sources.list.d") {
        let mut found: Vec<_> = dir.flatten().map(|e| e.path()).collect();
        found.sort();
        files.extend(found.into_iter().filter(|p| {
            p.extension()
                .is_some_and(|ext| ext == "list" || ext == "sources")
        }));
    }
    files
        .iter()
        .filter_map(|file| std::fs::read_to_string(file).ok())
        .flat_map(|text| {
            text.lines()
                .filter(|line| !line.trim_start().starts_with('#'))
                .flat_map(|line| {
                    line.split_whitespace()
                        .map(str::to_owned)
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        })
        .find_map(|word| {
            let rest = word.strip_prefix("http://")?;
            let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
            let path = format!("/{}/", path.trim_end_matches('/'));
            Some((host.to_owned(), path.replace("//", "/")))
        })
}
