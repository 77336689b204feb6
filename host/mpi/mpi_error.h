#pragma once
/// @file mpi_error.h
/// The distributed code's exception, apart from communicator.h so that the code that needs no MPI (the
/// essential trees, host/mpi/let.h) does not include mpi.h.

#include "common/errors.h"

namespace octwalk::mpi {

/// A failed MPI call, an inconsistency between ranks or a malformed message from another rank (the message
/// names the rank and the call).
class MpiError : public BackendError
{
public:
    using BackendError::BackendError;
};

} // namespace octwalk::mpi
