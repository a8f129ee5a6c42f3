"""Pure array kernels: no MPI, no I/O, no state. Everything here is a function of arrays."""
