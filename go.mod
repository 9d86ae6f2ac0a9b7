module github.com/darkroomlabs/darkroom

go 1.26.8

require (
	fyne.io/fyne/v2 v2.7.1 // indirect
	github.com/NVIDIA/go-nvml v0.13.4-1 // indirect
	github.com/adrg/xdg v0.5.3 // indirect
	github.com/aymerick/douceur v0.2.0 // indirect
	github.com/gomlx/gomlx v0.26.0 // indirect
	github.com/gorilla/css v1.0.1 // indirect
	github.com/microcosm-cc/bluemonday v1.0.27 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/term v0.48.0 // indirect
)
