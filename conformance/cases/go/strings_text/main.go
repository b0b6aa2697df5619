// Command prog builds and transforms text.
package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"unicode"
	"unicode/utf8"
)

func main() {
	var sb strings.Builder
	for i := 0; i < 100000; i++ {
		sb.WriteString(strconv.Itoa(i))
		sb.WriteByte(',')
	}
	s := sb.String()
	fmt.Println(len(s), strings.Count(s, "7"), s[:20])
	fmt.Println(strings.Fields("  a b\tc\n"), strings.Split("a,b,,c", ","), strings.Repeat("ab", 3))
	fmt.Println(strings.ToUpper("straße"), strings.Title("x"), strings.EqualFold("Go", "GO"), strings.TrimFunc("¡¡Hola!!", unicode.IsPunct))
	t := "héllo, 世界 🙂"
	fmt.Println(len(t), utf8.RuneCountInString(t), []rune(t)[7], strings.ToValidUTF8("a\xffb", "?"))
	for i, r := range "aé世" {
		fmt.Print(i, ":", string(r), " ")
	}
	fmt.Println()
	n, err := strconv.ParseInt("-9223372036854775808", 10, 64)
	_, err2 := strconv.Atoi("12a")
	fl, _ := strconv.ParseFloat("1e-5", 64)
	fmt.Println(n, err, err2, fl, strconv.Quote("tab\there"), strconv.FormatInt(255, 2))
	fmt.Printf("%5d|%-5s|%05.2f|%x|%X|%o|%q|%v|%+v|%T|%c|%U\n", 42, "ab", 3.14159, "hi", 255, 8, 'x', []int{1}, struct{ A int }{1}, 1.5, 0x4E16, 0x1F642)
	re := regexp.MustCompile(`(\w+)@(\w+)\.com`)
	text := "ann@example.com, bob@test.com; bad@x"
	fmt.Println(re.FindAllStringSubmatch(text, -1), re.ReplaceAllString(text, "$2:$1"))
	tmpl := template.Must(template.New("t").Parse("{{range .}}{{.Name}} is {{.Age}}{{if gt .Age 30}} (senior){{end}}\n{{end}}"))
	tmpl.Execute(os.Stdout, []struct {
		Name string
		Age  int
	}{{"ann", 31}, {"bob", 22}})
	r := strings.NewReplacer("<", "&lt;", ">", "&gt;")
	fmt.Println(r.Replace("<b>bold</b>"), strings.Map(func(r rune) rune {
		if unicode.IsDigit(r) {
			return -1
		}
		return r
	}, "a1b2c3"))
}
