"""Reads a JUnit XML file with two real parsers and validates it against the Jenkins/Ant
JUnit schema (junit-10.xsd); prints what each counted as one JSON object.

Usage: python junit.py FILE XSD
"""
import json
import sys
import unittest

import junitparser
import xmlschema
import xunitparser


def junitparser_view(path):
    xml = junitparser.JUnitXml.fromfile(path)
    cases = []
    for suite in xml:
        for case in suite:
            results = case.result
            kind = results[0].__class__.__name__.lower() if results else "passed"
            cases.append({
                "name": case.name,
                "classname": case.classname,
                "time": case.time,
                "kind": kind,
                "type": results[0].type if results else None,
                "message": results[0].message if results else None,
                "text": (results[0].text or "") if results else "",
                "system_out": case.system_out or "",
            })
        timestamp = suite.timestamp
    return {"cases": cases, "timestamp": timestamp}


def xunitparser_view(path):
    with open(path) as handle:
        suite, result = xunitparser.parse(handle)
    cases = []
    for case in suite:
        cases.append({"name": case.methodname, "kind": case.result, "time": case.time.total_seconds()})
    return {
        "run": result.testsRun,
        "failures": len(result.failures),
        "errors": len(result.errors),
        "skipped": len(result.skipped),
        "cases": cases,
    }


def main():
    path, xsd = sys.argv[1], sys.argv[2]
    schema = xmlschema.XMLSchema(xsd)
    errors = [str(e.reason) + " at " + str(e.path) for e in schema.iter_errors(path)]
    print(json.dumps({
        "xsd_errors": errors,
        "junitparser": junitparser_view(path),
        "xunitparser": xunitparser_view(path),
    }))


if __name__ == "__main__":
    main()
