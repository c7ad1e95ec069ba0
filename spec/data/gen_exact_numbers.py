#!/usr/bin/env python3
"""Writes spec/data/exact_numbers.tsv: JSON number literals and what Python's
Decimal (the pure-Python _pydecimal, exact for any exponent) says of them,
for the canonical form with exact numbers (TG_CANON_EXACT).

Columns: the literal; its exact form (the decimal value, digits without
leading or trailing zeros, in ECMAScript Number::toString's layout); a
group number, equal exactly when two literals are the same decimal; 1 when
the shortest text of the literal's double (Python's repr) spells the same
decimal, so RFC 8785 and the exact form agree, else 0.

Rows: the boundaries (2^53, 2^64, 1e21, 1e-7, ...), then groups of random
decimals, each written several ways (point moved, zeros added, exponent
spelled differently) beside its neighbours one unit in the last digit away.
Deterministic: the same seed writes the same bytes.

usage: gen_exact_numbers.py [--seed N] [--groups N] > exact_numbers.tsv
"""
import argparse
import random
from _pydecimal import Decimal

MAX = Decimal("1.7976931348623157e308")  # the parser refuses what overflows a double

FIXED = [
    ["9007199254740992", "9007199254740992.0", "9.007199254740992e15"],
    ["9007199254740993", "90071992547409930e-1", "0.9007199254740993e16"],
    ["-9007199254740993", "-9.007199254740993E+15"],
    ["-9007199254740992"],
    ["18446744073709551616", "1.8446744073709551616e19"],
    ["18446744073709551615"],
    ["12345678901234567890", "1.2345678901234567890e19", "123456789012345678900e-1",
     "1234567890123456789e1", "0.0000012345678901234567890e25"],
    ["12345678901234567891"],
    ["12345678901234567000", "1.2345678901234567e19"],
    ["1e21", "1000000000000000000000", "10e20", "1E+21"],
    ["999999999999999999999", "9.99999999999999999999e20"],
    ["1e-7", "0.0000001", "100e-9"],
    ["0.000001", "1e-6"],
    ["0.1", "1e-1", "0.10", "10e-2"],
    ["0.1000000000000000000001", "1000000000000000000001e-22"],
    ["0.30000000000000004"],
    ["0.3"],
    ["1", "1.0", "10e-1", "0.1e1", "1.000000000000000000000000000000"],
    ["0", "-0", "0.0", "-0.0", "0e10", "0E-400", "-0.000e-5"],
    ["5e-324"],
    ["2e-324"],
    ["1e-400", "0.0001e-396"],
    ["1e-401"],
    ["1.7976931348623157e308"],
    ["1e-1000000000000000000", "0.1e-999999999999999999", "10e-1000000000000000001"],
    ["1e-1000000000000000001"],
    ["1e-1000000000000000000000", "0.001e-999999999999999999997", "100e-1000000000000000000002"],
    ["1e-999999999999999999999", "0.1e-999999999999999999998"],
    ["1e-10000000000000000", "1e-000010000000000000000"],
    ["1e-1000000000000000"],
    ["123456789012345678901234567890123456789"],
    ["123456789012345678901234567890123456788"],
    ["-0.00000000000000000000000000000000000000001234567890123456789"],
]


def exact_form(d):
    """The exact form of Decimal d: ECMAScript's layout of its digits."""
    sign, digits, exp = d.as_tuple()
    digits = list(digits)
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop()
        exp += 1
    if digits == [0]:
        return "0"
    s = "".join(map(str, digits))
    k, n = len(s), len(s) + exp  # value = 0.s x 10^n
    if k <= n <= 21:
        out = s + "0" * (n - k)
    elif 0 < n <= 21:
        out = s[:n] + "." + s[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * -n + s
    else:
        x = n - 1
        out = s[0] + ("." + s[1:] if k > 1 else "") + "e" + ("+" if x > 0 else "-") + str(abs(x))
    return ("-" if sign else "") + out


def round_trips(literal):
    """1 when the shortest text of the literal's double spells its value."""
    f = float(literal)
    return 1 if Decimal(repr(f)) == Decimal(literal) else 0


def spell(rng, negative, digits, n):
    """One JSON spelling of +/- 0.digits x 10^n: the point moved by a random
    shift (compensated in the exponent), zeros before or after, the
    exponent written in one of several ways."""
    lead = rng.choice([0, 0, 0, 1, 3, 8])  # zeros before the digits, after "0."
    trail = rng.choice([0, 0, 0, 1, 4])  # zeros after the digits
    body = digits + "0" * trail
    # the text "ip.fp" holding body, with ip the first `point` characters
    point = rng.randint(0, len(body))
    if lead or point == 0:
        ip, fp = "0", "0" * lead + body
        shift = -lead  # the text's value is 0.body x 10^-lead
    else:
        ip, fp = body[:point], body[point:]
        shift = point
    e = n - shift
    text = ip + ("." + fp if fp else "")
    if e or rng.random() < 0.2:
        mark = rng.choice(["e", "E"])
        sgn = "-" if e < 0 else rng.choice(["", "+"])
        text += mark + sgn + "0" * rng.choice([0, 0, 2]) + str(abs(e))
    return ("-" if negative else "") + text


def random_value(rng):
    ndigits = rng.choice([1, 2, 5, 15, 16, 17, 18, 19, 20, 21, 25, 30, 40])
    digits = str(rng.randint(1, 9)) + "".join(rng.choice("0123456789") for _ in range(ndigits - 1))
    digits = digits.rstrip("0") or "1"
    r = rng.random()
    if r < 0.6:
        n = rng.randint(-8, 25)
    elif r < 0.85:
        n = rng.randint(-330, 300)
    else:
        n = -rng.choice([10 ** 15, 10 ** 16, 10 ** 18, 10 ** 19, 10 ** 22]) + rng.randint(-30, 30)
    return rng.random() < 0.3, digits, n


def neighbour(digits, n):
    """0.digits x 10^n plus one unit in its last place, as (digits, n)."""
    s = str(int(digits) + 1)
    return s.rstrip("0"), n + len(s) - len(digits)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=8)
    ap.add_argument("--groups", type=int, default=300)
    args = ap.parse_args()
    rng = random.Random(args.seed)

    groups = [list(g) for g in FIXED]
    while len(groups) < len(FIXED) + args.groups:
        negative, digits, n = random_value(rng)
        if n + 1 > 300:
            continue
        for ds, dn in ((digits, n), neighbour(digits, n)):
            groups.append([spell(rng, negative, ds, dn) for _ in range(rng.randint(1, 4))])

    print("# Generated by spec/data/gen_exact_numbers.py --seed %d --groups %d; do not edit." %
          (args.seed, args.groups))
    print("# literal, exact form, group (equal exactly when Decimal says equal), round-trips")
    seen = set()
    values = {}  # Decimal -> group: a dict compares its keys as Decimal does
    for literal in (lit for g in groups for lit in g):
        if literal in seen:
            continue
        seen.add(literal)
        d = Decimal(literal)
        assert abs(d) <= MAX, literal
        group = values.setdefault(d, len(values) + 1)
        print("%s\t%s\t%d\t%d" % (literal, exact_form(d), group, round_trips(literal)))


if __name__ == "__main__":
    main()
