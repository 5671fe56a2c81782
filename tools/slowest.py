"""The slowest tests of a pytest JUnit report, each with its setup, call and teardown (the
report's `time`): `python tools/slowest.py report.xml 10`. `make test` prints them last."""

import sys
import xml.etree.ElementTree as ET


def slowest(path, count):
    """(seconds, test id) of the `count` slowest test cases in the report at `path`."""
    cases = ET.parse(path).getroot().iter("testcase")
    timed = [(float(c.get("time", 0)), f"{c.get('classname')}::{c.get('name')}") for c in cases]
    return sorted(timed, reverse=True)[:count]


def main(argv):
    if len(argv) != 2 or not argv[1].isdigit():
        sys.exit("usage: python tools/slowest.py REPORT.xml COUNT")
    rows = slowest(argv[0], int(argv[1]))
    print(f"the {len(rows)} slowest tests (setup, call and teardown):")
    for seconds, name in rows:
        print(f"{seconds:9.2f}s  {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
