// Command prog compresses and archives fixed data.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

func main() {
	var sb strings.Builder
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&sb, "line %d of the text, repeated %d times\n", i, i%7)
	}
	data := []byte(sb.String())
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.ModTime = time.Unix(0, 0)
	zw.Write(data)
	zw.Close()
	zr, _ := gzip.NewReader(bytes.NewReader(gz.Bytes()))
	back, _ := io.ReadAll(zr)
	fmt.Println("gzip", len(data), gz.Len(), bytes.Equal(back, data))
	var zl bytes.Buffer
	w := zlib.NewWriter(&zl)
	w.Write(data)
	w.Close()
	fmt.Println("zlib", zl.Len())
	var fl bytes.Buffer
	fw, _ := flate.NewWriter(&fl, flate.BestSpeed)
	fw.Write(data)
	fw.Close()
	fmt.Println("flate", fl.Len())

	zf, _ := os.Create("out.zip")
	z := zip.NewWriter(zf)
	for _, name := range []string{"a.txt", "dir/b.txt"} {
		hw, _ := z.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Date(2020, 1, 2, 3, 4, 6, 0, time.UTC)})
		hw.Write([]byte(strings.Repeat(name, 100)))
	}
	z.Close()
	zf.Close()
	zrd, err := zip.OpenReader("out.zip")
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	for _, f := range zrd.File {
		rc, _ := f.Open()
		b, _ := io.ReadAll(rc)
		rc.Close()
		fmt.Println("zip", f.Name, len(b), f.Modified.UTC())
	}
	zrd.Close()
	st, _ := os.Stat("out.zip")
	fmt.Println("zip size", st.Size())

	tf, _ := os.Create("out.tar")
	tw := tar.NewWriter(tf)
	tw.WriteHeader(&tar.Header{Name: "x.txt", Mode: 0o644, Size: 5, ModTime: time.Unix(1600000000, 0)})
	tw.Write([]byte("12345"))
	tw.Close()
	tf.Close()
	tf, _ = os.Open("out.tar")
	tr := tar.NewReader(tf)
	for {
		h, err := tr.Next()
		if err != nil {
			fmt.Println("tar end:", err)
			break
		}
		b, _ := io.ReadAll(tr)
		fmt.Println("tar", h.Name, h.Size, string(b), h.ModTime.UTC())
	}
	tf.Close()
}
