# Here-documents: expanded, quoted, tab-stripped; here-strings in bash.
name=world
cat <<EOF
hello $name, $((6 * 7))
$(echo substituted)
EOF
cat <<'EOF'
literal $name $(not run)
EOF
cat <<-EOF
	tab-indented $name
		twice
	EOF
while read -r a b; do echo "$b-$a"; done <<EOF
1 one
2 two
EOF
tr a-z A-Z <<< "here string"
