#!/usr/bin/env python3
"""Writes a fatbin into a C++ source as kernels/fatbin.hpp's collectiveFatbin() (build step)."""
import sys


def main(fatbin_path: str, output_path: str) -> None:
    data = open(fatbin_path, "rb").read()
    lines = []
    for start in range(0, len(data), 24):
        lines.append(",".join(str(b) for b in data[start:start + 24]))
    with open(output_path, "w") as out:
        out.write("// Generated from " + fatbin_path.split("/")[-1] + " by embed_fatbin.py.\n")
        out.write('#include "kernels/fatbin.hpp"\n\nnamespace tutti::kernels {\nnamespace {\n')
        out.write("alignas(16) const unsigned char kImage[] = {\n")
        out.write(",\n".join(lines))
        out.write("};\n}  // namespace\n\n")
        out.write("Image collectiveFatbin() {\n  return {kImage, sizeof kImage};\n}\n\n")
        out.write("}  // namespace tutti::kernels\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: embed_fatbin.py FATBIN OUTPUT.cpp")
    main(sys.argv[1], sys.argv[2])
