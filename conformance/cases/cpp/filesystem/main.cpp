// std::filesystem in the working directory: create, iterate (sorted),
// copy, rename, sizes, remove_all; and the temp directory.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>
namespace fs = std::filesystem;
using namespace std;

int main() {
    fs::create_directories("work/a/b");
    for (int i = 0; i < 3; i++)
        ofstream("work/a/file" + to_string(i) + ".txt") << string(100 * (i + 1), 'x');
    ofstream("work/a/b/deep.txt") << "deep\n";
    fs::copy("work/a", "work/copy", fs::copy_options::recursive);
    fs::rename("work/copy/file0.txt", "work/copy/renamed.txt");
    fs::create_symlink("file1.txt", "work/copy/link");
    vector<string> seen;
    for (auto &e : fs::recursive_directory_iterator("work")) {
        string kind = e.is_symlink() ? "link" : e.is_directory() ? "dir" : "file";
        string size = e.is_regular_file() && !e.is_symlink() ? " " + to_string(e.file_size()) : "";
        seen.push_back(e.path().generic_string() + " " + kind + size);
    }
    sort(seen.begin(), seen.end());
    for (auto &s : seen)
        cout << s << '\n';
    cout << "exists " << fs::exists("work/a/b/deep.txt") << ", current " << fs::current_path() << '\n';
    cout << "absolute " << fs::absolute("work") << '\n';
    cout << "temp " << fs::temp_directory_path() << '\n';
    auto sp = fs::space(".");
    cout << "space known: " << (sp.capacity > 0) << '\n';
    cout << "removed " << fs::remove_all("work") << '\n';
    cout << "gone " << !fs::exists("work") << '\n';
    return 0;
}
