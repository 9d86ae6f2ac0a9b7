package ui

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"os"
	"os/exec"
)

// captureX grabs the X screen with xwd (x11-apps). The window check uses it when
// OpenGL's front buffer cannot be read back, as under Xvfb with Mesa.
func captureX() (image.Image, error) {
	display := os.Getenv("DISPLAY")
	if display == "" {
		return nil, errors.New("no DISPLAY")
	}
	out, err := exec.Command("xwd", "-root", "-silent", "-display", display).Output()
	if err != nil {
		return nil, fmt.Errorf("xwd: %w", err)
	}
	return decodeXWD(out)
}

// decodeXWD decodes a ZPixmap XWD file of 24 or 32 bits per pixel.
func decodeXWD(b []byte) (image.Image, error) {
	if len(b) < 100 {
		return nil, errors.New("xwd: short header")
	}
	h := make([]uint32, 25)
	if err := binary.Read(bytes.NewReader(b[:100]), binary.BigEndian, h); err != nil {
		return nil, err
	}
	headerSize, format, width, height := h[0], h[2], int(h[4]), int(h[5])
	byteOrder, bpp, bpl := h[7], int(h[11]), int(h[12])
	rmask, gmask, bmask, ncolors := h[14], h[15], h[16], h[19]
	if format != 2 || (bpp != 32 && bpp != 24) || width <= 0 || height <= 0 || width > 1<<15 || height > 1<<15 {
		return nil, fmt.Errorf("xwd: unsupported image (format %d, %d bpp, %dx%d)", format, bpp, width, height)
	}
	off := int(headerSize) + int(ncolors)*12
	if off < 0 || off+bpl*height > len(b) {
		return nil, errors.New("xwd: truncated image")
	}
	shift := func(m uint32) (uint, uint32) {
		s := uint(0)
		for m != 0 && m&1 == 0 {
			m >>= 1
			s++
		}
		return s, m
	}
	rs, rm := shift(rmask)
	gs, gm := shift(gmask)
	bs, bm := shift(bmask)
	scale := func(v, m uint32) uint8 {
		if m == 0 {
			return 0
		}
		return uint8(v * 255 / m)
	}
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	step := bpp / 8
	for y := 0; y < height; y++ {
		row := b[off+y*bpl:]
		for x := 0; x < width; x++ {
			p := row[x*step : x*step+step]
			var v uint32
			if byteOrder == 0 { // LSBFirst
				for i := step - 1; i >= 0; i-- {
					v = v<<8 | uint32(p[i])
				}
			} else {
				for i := 0; i < step; i++ {
					v = v<<8 | uint32(p[i])
				}
			}
			img.SetRGBA(x, y, color.RGBA{scale(v>>rs&rm, rm), scale(v>>gs&gm, gm), scale(v>>bs&bm, bm), 255})
		}
	}
	return img, nil
}
