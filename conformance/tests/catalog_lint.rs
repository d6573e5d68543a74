//! The catalog lint: every id unique and well-formed, cited (a known section, every section
//! id defined in docs/contract.md; with the contract texts named by STOAT_SHARED_DIR, the
//! ignored quote tests find each quote verbatim in them), documented, and
//! wired (scenario checks have a body; mutant operators name real checks). Also keeps
//! docs/checks.md current.

use std::collections::BTreeSet;
use std::path::PathBuf;

use stoat_conformance::catalog::{all, Kind};
use stoat_conformance::mutate::operators;
use stoat_conformance::spec::{Edition, Editions, Source, SECTIONS};

/// Whitespace runs become one space; markdown emphasis and code marks (the contract-2 text
/// is published as markdown) are dropped on both sides.
fn normalize(text: &str) -> String {
    text.replace(['`', '*'], "")
        .replace('|', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A contract text the quotes come from: the published editions live outside this
/// repository, so the tests that read them are ignored unless asked for, and asked for
/// without STOAT_SHARED_DIR they fail.
fn shared_doc(relative: &str) -> String {
    let Some(dir) = std::env::var_os("STOAT_SHARED_DIR") else {
        panic!("set STOAT_SHARED_DIR to the directory holding the contract texts (contract/)");
    };
    let path = PathBuf::from(dir).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn ids_are_unique_and_well_formed() {
    let pattern = regex::Regex::new(r"^[A-Z]+\.[a-z0-9]+(-[a-z0-9]+)*$").expect("regex");
    let mut seen = BTreeSet::new();
    for def in all() {
        assert!(
            pattern.is_match(def.id),
            "{} is not AREA.kebab-case",
            def.id
        );
        assert!(seen.insert(def.id), "{} is declared twice", def.id);
    }
}

#[test]
fn every_check_is_cited_documented_and_wired() {
    for def in all() {
        assert!(
            SECTIONS.iter().any(|(anchor, _)| *anchor == def.spec),
            "{}: unknown section {}",
            def.id,
            def.spec
        );
        assert!(!def.title.trim().is_empty(), "{} has no title", def.id);
        assert!(def.quote.trim().len() >= 10, "{} quotes nothing", def.id);
        assert!(!def.tags.is_empty(), "{} has no tags", def.id);
        match def.kind {
            Kind::Scenario => assert!(
                def.scenario.is_some(),
                "{} is a scenario without a body",
                def.id
            ),
            Kind::Oracle => assert!(
                def.scenario.is_none(),
                "{} is an oracle rule with a body",
                def.id
            ),
        }
        match def.source {
            Source::Design => assert_eq!(
                def.spec, "design#decisions",
                "{}: a decision quote cites design#decisions",
                def.id
            ),
            Source::Contract => assert!(
                def.spec.starts_with("json-v3#"),
                "{}: a contract quote cites json-v3#",
                def.id
            ),
            Source::ContractV2 => assert!(
                def.spec.starts_with("json-v2#"),
                "{}: a contract-2 quote cites json-v2#",
                def.id
            ),
            Source::Mcp => assert!(
                stoat_conformance::spec::MCP_QUOTES
                    .iter()
                    .any(|(anchor, _, sentence)| *anchor == def.spec && *sentence == def.quote),
                "{}: an MCP quote is one of spec::MCP_QUOTES, under its own section",
                def.id
            ),
        }
        match def.editions {
            Editions::V2 => assert_eq!(
                def.source,
                Source::ContractV2,
                "{}: a contract-2-only rule quotes contract 2",
                def.id
            ),
            Editions::V3 { change } => assert!(
                change.trim().len() >= 10,
                "{}: a contract-3-only rule says what differs in contract 2",
                def.id
            ),
            Editions::Both => assert_ne!(
                def.source,
                Source::ContractV2,
                "{}: a rule of both editions quotes contract 3",
                def.id
            ),
        }
    }
}

/// A quote of our own decisions is the words of their restatement in docs/contract.md.
#[test]
fn every_decision_quote_is_verbatim_from_docs_contract() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/contract.md");
    let ours = normalize(&std::fs::read_to_string(path).expect("docs/contract.md"));
    for def in all().iter().filter(|d| d.source == Source::Design) {
        let quote = normalize(def.quote);
        assert!(
            ours.contains(&quote),
            "{}: quote not found verbatim in docs/contract.md: {quote:?}",
            def.id
        );
    }
}

#[test]
#[ignore = "needs STOAT_SHARED_DIR: the contract texts the quotes come from"]
fn every_quote_is_verbatim_from_its_source() {
    let contract = normalize(&shared_doc("contract/stoat-json-v3.md"));
    let contract2 = normalize(&shared_doc("contract/stoat-json-v2.md"));
    for def in all()
        .iter()
        .filter(|d| matches!(d.source, Source::Contract | Source::ContractV2))
    {
        let text = match def.source {
            Source::ContractV2 => &contract2,
            _ => &contract,
        };
        let quote = normalize(def.quote);
        assert!(
            text.contains(&quote),
            "{}: quote not found verbatim in its source: {quote:?}",
            def.id
        );
    }
}

/// Every sentence the explore model's transitions quote is contract 3's own words.
#[test]
#[ignore = "needs STOAT_SHARED_DIR: the contract texts the quotes come from"]
fn every_explore_model_quote_is_verbatim_from_contract_3() {
    let contract = normalize(&shared_doc("contract/stoat-json-v3.md"));
    for quote in stoat_conformance::explore::model::QUOTES {
        assert!(
            contract.contains(&normalize(quote)),
            "the explore model quotes words not in contract 3: {quote:?}"
        );
    }
}

/// A MUST rests on contract text of its editions; a rule of our own is a SHOULD, or a
/// requirement the SUT's profile declares (a SHOULD in the catalog, a MUST only where it is
/// declared).
#[test]
fn every_must_is_the_contracts() {
    for def in all() {
        if def.level == stoat_conformance::Level::Must {
            assert_ne!(
                def.source,
                Source::Design,
                "{}: a MUST cites the contract, not our decisions",
                def.id
            );
            assert!(
                def.requires.is_none(),
                "{}: a declared requirement is a SHOULD in the catalog",
                def.id
            );
        }
        if def.requires.is_some() {
            assert_eq!(
                def.source,
                Source::Design,
                "{}: a declared requirement is one of our decisions",
                def.id
            );
        }
    }
}

/// In a run judging contract 2, a check of both editions cites a contract-2 section and a
/// sentence found verbatim in the contract-2 text.
#[test]
fn every_check_of_both_editions_cites_contract_2_words_in_an_edition_2_run() {
    for def in all() {
        let (section, _) = def.citation(Edition::V2);
        if def.editions.contains(Edition::V2) && def.source != Source::Design {
            assert!(
                section.starts_with("json-v2#"),
                "{}: cites {section} in an edition-2 run",
                def.id
            );
            assert!(
                SECTIONS.iter().any(|(anchor, _)| *anchor == section),
                "{}: unknown section {section}",
                def.id
            );
        }
    }
}

/// The contract-2 sentence each such check cites is the contract-2 text's own.
#[test]
#[ignore = "needs STOAT_SHARED_DIR: the contract texts the quotes come from"]
fn every_edition_2_quote_is_verbatim_from_contract_2() {
    let contract2 = normalize(&shared_doc("contract/stoat-json-v2.md"));
    for def in all()
        .iter()
        .filter(|d| d.editions.contains(Edition::V2) && d.source != Source::Design)
    {
        let (_, quote) = def.citation(Edition::V2);
        assert!(
            contract2.contains(&normalize(quote)),
            "{}: its edition-2 sentence is not in the contract-2 text: {quote:?}",
            def.id
        );
    }
}

#[test]
fn mutant_operators_name_real_checks() {
    let mut names = BTreeSet::new();
    for op in operators() {
        assert!(names.insert(op.name), "operator {} declared twice", op.name);
        // `explore` kills the state-breaking operators (tests/explore.rs), not a check.
        let named = op.caught_by.iter().chain(op.triggers);
        let explore = [
            stoat_conformance::mutate::ops::EXPLORE,
            stoat_conformance::mutate::ops::EXPLORE_CONCURRENT,
        ];
        for id in named.filter(|id| !explore.contains(*id)) {
            assert!(
                all().iter().any(|d| d.id == *id),
                "operator {} names unknown check {id}",
                op.name
            );
        }
        assert_eq!(
            stoat_conformance::mutate::Op::from_name(op.name).map(|o| o.name()),
            Some(op.name),
            "operator {} is not found by its own name",
            op.name
        );
    }
}

#[test]
fn docs_checks_md_is_current() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/checks.md");
    let expected = stoat_conformance::report::catalog_doc::markdown();
    if std::env::var_os("STOAT_BLESS").is_some() && std::env::var_os("CI").is_none() {
        std::fs::write(&path, &expected).expect("write docs/checks.md");
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(actual == expected, "docs/checks.md is stale: run `stoat-conformance list --format md > docs/checks.md` (or STOAT_BLESS=1 cargo test)");
}

/// Every section id a check may cite is defined in docs/contract.md, named and with the
/// HTML anchor the HTML report links to (`spec::doc_link`), so a citation always resolves to
/// a file in this repository and in the release tarball.
#[test]
fn every_section_id_is_defined_in_docs_contract() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/contract.md");
    let text = std::fs::read_to_string(&path).expect("docs/contract.md");
    let missing: Vec<&str> = SECTIONS
        .iter()
        .map(|(anchor, _)| *anchor)
        .filter(|anchor| {
            let html_anchor = format!(
                "<a id=\"{}\"></a>",
                stoat_conformance::spec::doc_anchor(anchor)
            );
            !text.contains(&format!("`{anchor}`")) || !text.contains(&html_anchor)
        })
        .collect();
    assert!(
        missing.is_empty(),
        "not defined in docs/contract.md: {missing:?}"
    );
}

#[test]
fn typed_ids_agree_with_their_catalog_entries() {
    use stoat_conformance::ids;
    for id in [
        ids::SMOKE_VERSION,
        ids::SANDBOX_NO_WRITES_OUTSIDE,
        ids::ENV_ONE_RESULT,
    ] {
        let def = stoat_conformance::catalog::find(id.name)
            .unwrap_or_else(|| panic!("{id} has no catalog entry"));
        assert_eq!(def.check_id(), id, "{id} differs from its catalog entry");
    }
}
