// Command prog hashes fixed data.
package main

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"os"
)

func main() {
	data := []byte("The quick brown fox jumps over the lazy dog")
	fmt.Printf("sha256 %x\n", sha256.Sum256(data))
	fmt.Printf("sha512 %x\n", sha512.Sum512(data))
	fmt.Printf("sha1 %x\nmd5 %x\n", sha1.Sum(data), md5.Sum(data))
	mac := hmac.New(sha256.New, []byte("key"))
	mac.Write(data)
	fmt.Println("hmac", hex.EncodeToString(mac.Sum(nil)))
	fmt.Println("crc32", crc32.ChecksumIEEE(data))
	h := fnv.New64a()
	h.Write(data)
	fmt.Println("fnv", h.Sum64())
	fmt.Println(base64.StdEncoding.EncodeToString(data[:10]), base64.URLEncoding.EncodeToString([]byte{0xfb, 0xff}))
	f, _ := os.Create("big.bin")
	for i := 0; i < 1000; i++ {
		f.Write(make([]byte, 1000))
	}
	f.Close()
	f, _ = os.Open("big.bin")
	s := sha256.New()
	n, _ := io.Copy(s, f)
	f.Close()
	fmt.Printf("file %d %x\n", n, s.Sum(nil))
	inc := sha256.New()
	for i := 0; i < 100000; i++ {
		fmt.Fprintf(inc, "%d", i)
	}
	fmt.Printf("incremental %x\n", inc.Sum(nil))
	buf := make([]byte, 32)
	k, err := rand.Read(buf)
	fmt.Println("rand", k, err, len(rand.Text()))
}
