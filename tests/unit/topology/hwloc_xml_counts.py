#!/usr/bin/env python3
"""tutti-topo --file on each hwloc XML fixture finds the packages, NUMA nodes, cores, hardware
threads, PCI nodes (PCI-to-PCI bridges, NVIDIA/AMD display devices, network devices), GPUs,
NICs and NIC ports that the file lists, counted here with Python's own XML parser.
Usage: hwloc_xml_counts.py TUTTI_TOPO FIXTURES_DIR"""
import collections
import json
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

GPU_VENDORS = {"10de", "1002"}


def expected(path):
    objects = list(ET.parse(path).iter("object"))
    types = collections.Counter(o.get("type") for o in objects)
    counts = {"packages": types["Package"], "numa": types["NUMANode"], "cores": types["Core"],
              "pus": types["PU"], "switches": 0, "gpus": 0, "nics": 0, "ports": 0}
    for o in objects:
        if o.get("type") == "Bridge" and o.get("bridge_type", "").startswith("1-"):
            counts["switches"] += 1
        if o.get("type") != "PCIDev":
            continue
        pci_class, ids = o.get("pci_type").split()[:2]
        vendor = ids.strip("[]").split(":")[0]
        if pci_class.startswith("03") and vendor in GPU_VENDORS:
            counts["gpus"] += 1
        elif pci_class.startswith("02"):
            counts["nics"] += 1
            counts["ports"] += sum(1 for child in o.findall("object")
                                   if child.get("osdev_type") in ("2", "3"))
    return counts


def found(tutti_topo, path):
    out = subprocess.run([tutti_topo, "--file", str(path), "--json", "-"], check=True,
                         capture_output=True, text=True).stdout
    topo = json.loads(out)
    kinds = collections.Counter(n["kind"] for n in topo["nodes"])
    return {"packages": len({pu["package"] for pu in topo["pus"]}), "numa": kinds["CPU"],
            "cores": len({pu["core"] for pu in topo["pus"]}), "pus": len(topo["pus"]),
            "switches": kinds["PCI"], "gpus": kinds["GPU"], "nics": kinds["NIC"],
            "ports": kinds["NET"]}


def main():
    tutti_topo, fixtures = sys.argv[1], pathlib.Path(sys.argv[2])
    failed = False
    for path in sorted(fixtures.glob("hwloc-*.xml")):
        want, got = expected(path), found(tutti_topo, path)
        print(f"{path.name}: file {want}, tutti-topo {got}")
        if want != got:
            print(f"FAILED: {path.name} differs")
            failed = True
    sys.exit(1 if failed else 0)


main()
