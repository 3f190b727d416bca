package attribution

import "github.com/memscope/memscope/capture"

// AddDeviceUsed fills in the device used (the driver's view) a capture run
// sampled, when the snapshot at path sits in a 'memscope capture' run
// directory (capture.DeviceUsedFor): on its rank's device.
func (s *Summary) AddDeviceUsed(path string) {
	dev, used, ok := capture.DeviceUsedFor(path)
	for i := range s.Devices {
		if ok && s.Devices[i].Device == dev {
			s.Devices[i].DeviceUsedPeak = &used
		}
	}
}
