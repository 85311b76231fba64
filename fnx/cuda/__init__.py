"""The GPU kernel layer: generated elementwise kernels, fnx's capture-safe cuBLAS binding and
the lowering of jaxprs onto them. CuPy is imported only when these are used."""
