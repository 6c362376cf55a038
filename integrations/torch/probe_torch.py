"""Prints what Meson needs to build against the PyTorch of this interpreter, one item a line:
version, C++11 ABI flag (0/1), then the existing header and library directories, each prefixed
"include " or "lib ". Exits 1 when torch cannot be imported."""
import os
import sys

try:
    import torch
    from torch.utils import cpp_extension
except ImportError as error:
    print(f"torch not importable: {error}", file=sys.stderr)
    sys.exit(1)

print(torch.__version__.split("+")[0])
print(int(torch.compiled_with_cxx11_abi()))
for path in cpp_extension.include_paths():
    if os.path.isdir(path):
        print(f"include {path}")
for path in cpp_extension.library_paths():
    if os.path.isdir(path):
        print(f"lib {path}")
