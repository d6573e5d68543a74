//! Owns the JUnit XML reporter (quick-junit): one testsuite, one testcase per check, the
//! findings as the failure text, the suite/contract/SUT as properties.

use std::path::PathBuf;

use quick_junit::{
    NonSuccessKind, Property, Report as JunitReport, TestCase, TestCaseStatus, TestSuite,
};

use super::Reporter;
use crate::run::events::{Event, RunInfo, Status};

pub struct Junit {
    path: PathBuf,
    info: Option<RunInfo>,
    cases: Vec<TestCase>,
    smoke_failure: Option<String>,
}

impl Junit {
    pub fn new(path: PathBuf) -> Self {
        Junit {
            path,
            info: None,
            cases: Vec::new(),
            smoke_failure: None,
        }
    }

    /// Renders the XML (also used by snapshot tests).
    pub fn render(&self) -> String {
        let mut suite = TestSuite::new("stoat-conformance");
        if let Some(info) = &self.info {
            suite.add_property(Property::new("suite_version", info.suite_version.as_str()));
            suite.add_property(Property::new("contract", info.contract.to_string()));
            suite.add_property(Property::new("sut", info.sut.as_str()));
            suite.add_property(Property::new("seed", info.seed.to_string()));
        }
        if let Some(message) = &self.smoke_failure {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status.set_message(message.as_str());
            suite.add_test_case(TestCase::new("SMOKE.version", status));
        }
        suite.add_test_cases(self.cases.clone());
        let mut report = JunitReport::new("stoat-conformance");
        report.add_test_suite(suite);
        report.to_string().unwrap_or_default()
    }
}

impl Reporter for Junit {
    fn event(&mut self, event: &Event) {
        match event {
            Event::Started(info) => self.info = Some(info.clone()),
            Event::Smoke {
                passed: false,
                findings,
                ..
            } => {
                self.smoke_failure = Some(
                    findings
                        .iter()
                        .map(|f| format!("{}: {}", f.pointer, f.message))
                        .collect::<Vec<_>>()
                        .join("\n"),
                );
            }
            Event::Check(result) => {
                let details = result
                    .findings
                    .iter()
                    .map(|f| {
                        format!(
                            "{} {}: {} [{}]",
                            f.check_id, f.pointer, f.message, f.spec_ref
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                let status = match result.status {
                    Status::Passed | Status::Warned | Status::ExpectedFailure => {
                        TestCaseStatus::success()
                    }
                    Status::Skipped => {
                        let mut status = TestCaseStatus::skipped();
                        if let Some(reason) = &result.reason {
                            status.set_message(reason.as_str());
                        }
                        status
                    }
                    Status::Errored => {
                        let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
                        status.set_message(result.reason.clone().unwrap_or_default());
                        status
                    }
                    Status::Failed | Status::Crashed | Status::StaleBaseline => {
                        let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                        status.set_message(
                            format!(
                                "{} {}",
                                result.status.label(),
                                result.reason.clone().unwrap_or_default()
                            )
                            .trim()
                            .to_string(),
                        );
                        status.set_description(details.clone());
                        status
                    }
                };
                let mut case = TestCase::new(result.id.as_str(), status);
                case.set_classname(format!(
                    "{}.{}",
                    result.tier,
                    result.id.split('.').next().unwrap_or("")
                ));
                case.set_time(std::time::Duration::from_millis(result.duration_ms));
                if result.status == Status::Warned {
                    case.set_system_out(details);
                }
                self.cases.push(case);
            }
            _ => {}
        }
    }

    fn finish(&mut self) -> std::io::Result<()> {
        std::fs::write(&self.path, self.render())
    }
}
