package fossil

import "errors"

// ErrCorrupt is wrapped by every error [Apply] returns: the delta is malformed, does not
// fit the source, or does not rebuild the target it describes.
var ErrCorrupt = errors.New("fossil: corrupt delta")

// maxNumber is the largest number the format carries: its integers are 32-bit.
const maxNumber = 1<<32 - 1
