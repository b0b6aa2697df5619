// fstream: write a file, append, read it back by lines and by words;
// binary read and write with seekg/tellg.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
using namespace std;

int main() {
    {
        ofstream out("notes.txt");
        for (int i = 0; i < 3; i++)
            out << "line " << i << '\n';
    }
    {
        ofstream app("notes.txt", ios::app);
        app << "appended\n";
    }
    ifstream in("notes.txt");
    string line;
    int n = 0;
    while (getline(in, line))
        cout << ++n << ": " << line << '\n';
    fstream bin("data.bin", ios::out | ios::in | ios::binary | ios::trunc);
    for (int i = 0; i < 256; i++)
        bin.put(char(i));
    bin.seekg(0, ios::end);
    cout << "size " << bin.tellg() << '\n';
    bin.seekg(65);
    cout << "byte 65 is " << char(bin.get()) << '\n';
    ifstream missing("no-such-file");
    cout << "missing opens: " << missing.is_open() << '\n';
    ostringstream os;
    os << ifstream("notes.txt").rdbuf();
    cout << "whole file " << os.str().size() << " bytes\n";
    return 0;
}
