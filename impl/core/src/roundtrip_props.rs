//! Round-trip property tests: vm.toml (`VmConfig` → `to_toml` → `parse`), forward
//! pairs (`HOST:GUEST`), qemu-img snapshot tables and checksum files (GNU and BSD styles)
//! read back exactly what was written. Sizes have theirs in `size.rs`. Unit tests, inside
//! the crate, because the modules they read are crate-private.

use std::collections::BTreeMap;

use crate::images::checksum::{find, Algorithm};
use crate::images::snapshot_table::parse_table;
use crate::vm::spec::{parse_pair, PortPair};
use crate::vm::{AppliedRecipe, ForwardConfig, VmConfig};
use proptest::prelude::*;

/// Any text a user or upstream may have put in vm.toml, control characters and quotes included.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "\\PC{0,10}",
        1 => "[\\x00-\\x1f\\x7f\"'\\\\]{0,4}",
    ]
}

fn string_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(text(), text(), 0..3)
}

fn applied() -> impl Strategy<Value = AppliedRecipe> {
    (text(), text(), string_map(), string_map(), text()).prop_map(
        |(version, hash, params, outputs, health)| AppliedRecipe {
            version,
            hash,
            at: None,
            params,
            outputs,
            health,
        },
    )
}

fn vm_config() -> impl Strategy<Value = VmConfig> {
    let names = (text(), text(), text(), text(), text(), text());
    let numbers = (
        any::<u32>(),
        any::<u32>(),
        (any::<bool>(), any::<bool>()),
        (any::<u16>(), any::<bool>()),
    );
    let lists = (
        prop::collection::vec(text(), 0..3),
        prop::collection::vec((any::<u16>(), any::<u16>()), 0..3),
        (text(), text(), text(), text()),
    );
    let policy = (
        proptest::option::of(any::<bool>()),
        proptest::option::of(prop::sample::select(
            stoat_wire::dto::AgentAccess::ALL.to_vec(),
        )),
        (text(), text()),
        prop::collection::btree_map(text(), string_map(), 0..2),
        prop::collection::btree_map(text(), applied(), 0..2),
    );
    (names, numbers, lists, policy).prop_map(
        |(
            (name, mode, os, iso, disk, share),
            (ram, cpus, (installed, host_loopback), (sshport, sshport_pinned)),
            (recipes, forwards, (display, backend, base, sshuser)),
            (allow_exec, agent_access, (project, key), recipe_params, applied),
        )| VmConfig {
            name,
            // Any word: the known ones, `""` and the rest (kept as written) all read back.
            mode: crate::vm::Mode::parse(&mode),
            os,
            iso,
            ram,
            cpus,
            disk,
            installed,
            share,
            sshport,
            sshport_pinned,
            recipes,
            display,
            forwards: forwards
                .into_iter()
                .map(|(hostport, guestport)| ForwardConfig {
                    hostport,
                    guestport,
                })
                .collect(),
            host_loopback,
            backend: crate::vm::Backend::parse(&backend),
            base,
            sshuser,
            console_password: "cpw".into(),
            allow_exec,
            agent_access,
            project,
            key,
            recipe_params,
            applied,
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn vm_toml_round_trips(config in vm_config()) {
        let text = config.to_toml();
        let back = VmConfig::parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(back, config);
    }

    #[test]
    fn forward_pairs_round_trip(host in any::<i64>(), guest in any::<i64>(), pad in "[ \t]{0,2}") {
        let pair = parse_pair(&format!("{pad}{host}:{guest}{pad}")).expect("a HOST:GUEST pair");
        prop_assert_eq!(pair, PortPair { host, guest });
    }

    #[test]
    fn forward_pairs_never_panic(text in "\\PC{0,12}") {
        let _ = parse_pair(&text);
    }

    #[test]
    fn snapshot_tables_round_trip(
        rows in prop::collection::vec((
            "[a-z][a-z0-9._-]{0,12}",
            prop_oneof![Just("0 B".to_string()), "[1-9][0-9]{0,3}(\\.[0-9])? (KiB|MiB|GiB)"],
            (2000u32..2100, 1u32..13, 1u32..29, 0u32..24, 0u32..60, 0u32..60),
            any::<bool>(),
        ), 0..5),
        crlf in any::<bool>(),
    ) {
        let mut text = String::from("Snapshot list:\nID        TAG               VM SIZE                DATE     VM CLOCK     ICOUNT\n");
        for (index, (tag, size, (y, mo, d, h, mi, s), icount)) in rows.iter().enumerate() {
            let date = format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}");
            let icount = if *icount { "0" } else { "--" };
            text.push_str(&format!("{}        {tag}  {size} {date}  00:00:01.234  {icount}", index + 1));
            text.push_str(if crlf { "\r\n" } else { "\n" });
        }
        let parsed = parse_table(&text);
        prop_assert_eq!(parsed.len(), rows.len());
        for (row, (tag, size, (y, mo, d, h, mi, s), _)) in parsed.iter().zip(&rows) {
            prop_assert_eq!(&row.snapshot.tag, tag);
            prop_assert_eq!(&row.snapshot.size_display, size);
            prop_assert_eq!(row.snapshot.vm_state, size != "0 B");
            prop_assert_eq!(
                &row.snapshot.created_display,
                &format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
            );
        }
    }

    #[test]
    fn checksum_files_round_trip(
        entries in prop::collection::btree_map("[A-Za-z0-9][A-Za-z0-9._-]{0,16}", (any::<bool>(), any::<bool>(), any::<bool>(), any::<[u8; 32]>()), 1..5),
        armour in any::<bool>(),
    ) {
        let mut text = String::new();
        if armour {
            text.push_str("-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n# checksums\n");
        }
        let mut expected = Vec::new();
        for (name, (bsd, long, star, bytes)) in &entries {
            let mut hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            if *long {
                hex = hex.repeat(2);
            }
            let algorithm = if *long { "SHA512" } else { "SHA256" };
            if *bsd {
                text.push_str(&format!("{algorithm} ({name}) = {hex}\n"));
            } else {
                text.push_str(&format!("{hex} {}{name}\n", if *star { "*" } else { " " }));
            }
            expected.push((name.clone(), hex, *long));
        }
        if armour {
            text.push_str("-----BEGIN PGP SIGNATURE-----\nabc\n-----END PGP SIGNATURE-----\n");
        }
        for (name, hex, long) in expected {
            let found = find(&text, &name).ok_or_else(|| TestCaseError::fail(format!("{name} not found in\n{text}")))?;
            prop_assert_eq!(&found.hex, &hex);
            prop_assert_eq!(found.algorithm, if long { Algorithm::Sha512 } else { Algorithm::Sha256 });
        }
    }
}
