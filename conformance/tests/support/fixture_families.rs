//! Command families the small fixture SUT does not implement in either edition (projects,
//! `up` applying recipes, MCP, remote recipes, the newer error-code scenarios, signals). Their checks
//! still run against it; they are proven against the reference by the mutant kit
//! (tests/mutants_reference.rs) instead, so here they may fail.

const NOT_IMPLEMENTED_BY_FIXTURE: &[&str] = &[
    "INIT.",
    "STATUS.",
    "PROJECT.",
    "UP.applies-recipes",
    "MCP.",
    "RECIPE.remote-",
    "RECIPE.git-",
    "RECIPE.new-",
    "RECIPE.show",
    "RECIPE.refresh",
    "RECIPE.search",
    "ERRORS.",
    "WAIT.until-applied",
    "APPLY.locked-skipped-reason",
    "APPLY.health-failed",
    "SIGNAL.",
];

/// Whether the check `id` belongs to a family the fixture does not implement.
pub fn not_implemented_by_fixture(id: &str) -> bool {
    NOT_IMPLEMENTED_BY_FIXTURE
        .iter()
        .any(|prefix| id.starts_with(prefix))
}
